// EgressProxy: one session's way out, served in the server. The sandbox's relay (sandbox-init,
// runtime/agent/init/egress_relay.h) accepts each connection a program makes to the proxy
// address on the sandbox's loopback and passes that socket itself, with SCM_RIGHTS, over the
// session's channel (a SOCK_SEQPACKET socket); this class reads the HTTP proxy request from it
// (CONNECT or a plain-HTTP absolute URI), judges the host name and then every address it
// resolves to against the Allowlist, dials the address it judged and carries the bytes.
// Refusals answer 403 with the reason in the status line, which pip and requests print.
//
// Threads: one reads the channel; each tunnel has its own (at most max_connections). The
// destructor closes every tunnel and joins them all: closing a session closes its tunnels.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"
#include "runtime/egress/allowlist.h"
#include "runtime/egress/egress_log.h"

namespace sandbox::egress {

struct EgressLimits {
  uint64_t max_bytes = 1ull << 30;  // SANDBOX_EGRESS_MAX_BYTES: both directions, whole session
  int max_connections = 32;         // tunnels open at once
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};   // a tunnel with no traffic
  std::chrono::milliseconds head_timeout{std::chrono::seconds(15)};  // to send the request head
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(15)};
  EgressLog::Budget log;  // log lines per interval about this session's connections
};

struct EgressUsage {
  uint64_t bytes = 0;        // carried, both directions
  uint64_t connections = 0;  // tunnels opened
  uint64_t refused = 0;      // requests answered with an error
  uint32_t open = 0;         // tunnels open now
  bool byte_limit_reached = false;
};

class EgressProxy {
 public:
  // Serves `channel` until destroyed. `session_id` labels the log lines. `published`, when
  // given, gets every byte carried added to it (atomically; memory shared with other
  // processes, egress_bytes_file.h) and must outlive the proxy.
  static Result<std::unique_ptr<EgressProxy>> Start(std::string session_id, Allowlist allowlist,
                                                    EgressLimits limits, Fd channel,
                                                    uint64_t* published = nullptr);
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  EgressUsage Usage() const;
  // Closes every tunnel and refuses new ones now (the session is closing); the destructor
  // still joins the threads. Thread-safe, idempotent.
  void Shutdown();

 private:
  struct Tunnel {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  EgressProxy(std::string session_id, Allowlist allowlist, EgressLimits limits, Fd channel, Fd stop,
              uint64_t* published);
  void ReadChannel();
  void Serve(Fd client);
  // Answers `status` with `reason` in the status line and the body, logs it, counts a refusal.
  void Refuse(int client, int status, const std::string& target, const std::string& reason);
  // Carries bytes both ways until both sides close, the idle timeout, the byte cap or stop.
  void Pump(int client, int upstream, const std::string& target);
  // Reserves up to `want` bytes of the session's budget; 0 when it is spent.
  size_t Reserve(size_t want);
  void Unreserve(size_t unused);
  // `bytes` went through: the metrics and the published count.
  void CountCarried(uint64_t bytes);
  void ReapFinished(bool all);

  const std::string session_id_;
  const Allowlist allowlist_;
  const EgressLimits limits_;
  Fd channel_;
  Fd stop_;  // eventfd: readable once the proxy is closing
  std::atomic<uint64_t> bytes_{0};
  uint64_t* const published_;  // or nullptr
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint32_t> open_{0};
  std::atomic<bool> byte_limit_reached_{false};
  EgressLog log_;
  std::mutex tunnels_mutex_;
  std::list<Tunnel> tunnels_;
  std::thread reader_;
};

}  // namespace sandbox::egress
