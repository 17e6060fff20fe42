// The transport sessions of the Streamable HTTP transport (2025 era): which Connection an
// Mcp-Session-Id names, for which subject, and when one is forgotten (idle past its TTL, or the
// least recently used idle one when the table is full; never one with a request in flight).
// No sockets: the transport asks it, and it is tested on its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mcp/server.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

class HttpSessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  HttpSessionTable(std::chrono::seconds idle_ttl, size_t max_sessions)
      : idle_ttl_(idle_ttl), max_sessions_(max_sessions) {}

  // The session `id` when it exists and belongs to `subject` (another subject's is answered as
  // an unknown one, so ids do not leak across subjects); marks it used at `now`.
  std::shared_ptr<Connection> Find(const std::string& id, const std::string& subject,
                                   Clock::time_point now = Clock::now());
  // Keeps `connection` under `id`: forgets the sessions idle past the TTL first, then, when
  // full, the least recently used idle one. kMaxSessions when every kept session is busy. An
  // id already kept stays as it is (two first requests of an adopted id at once).
  Status Remember(const std::string& id, std::shared_ptr<Connection> connection,
                  Clock::time_point now = Clock::now());
  // Takes session `id` of `subject` out of the table (DELETE /mcp); null when there is none.
  std::shared_ptr<Connection> Remove(const std::string& id, const std::string& subject);
  // Every session kept, for cancelling their requests when the server stops.
  std::vector<std::shared_ptr<Connection>> All() const;
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<Connection> connection;
    Clock::time_point last_used;
  };
  void ExpireLocked(Clock::time_point now);

  const std::chrono::seconds idle_ttl_;
  const size_t max_sessions_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> sessions_;
};

}  // namespace sandbox::mcp
