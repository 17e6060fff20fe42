// The metrics listener: GET /metrics on an address of its own (SANDBOX_METRICS_ADDR), for a
// scraper on the node, and the only way to scrape a stdio server. It speaks just enough
// HTTP/1.1 for a scraper: one request per connection, answered and closed; heads larger than
// 8 KiB or slower than 5 s are dropped, and so is a scraper that does not take its answer within
// 5 s. No token: bind it to loopback or a node-local address (the HTTP listener's /metrics is the
// one behind SANDBOX_AUTH_TOKEN). One thread serves up to 64 connections at once from one poll
// loop, so a client that connects and says nothing delays no other scrape; beyond 64 the kernel's
// backlog holds new connections until one ends.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

struct ListenAddress {
  std::string host;  // without brackets
  int port = 0;      // 0: any free port
};

// "127.0.0.1:9464", "[::1]:9464", "localhost:9464": host and port both required.
Result<ListenAddress> ParseListenAddress(const std::string& text);

class MetricsListener {
 public:
  // Binds `address` (fails with the reason: in use, no such address) and serves until
  // destroyed.
  static Result<std::unique_ptr<MetricsListener>> Start(const ListenAddress& address);
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  int port() const { return port_; }

 private:
  // One connection: the request head read so far, then the answer being sent.
  struct Client {
    Fd fd;
    std::string head;
    std::string answer;  // "" while the head is still coming
    size_t sent = 0;
    std::chrono::steady_clock::time_point deadline;  // to finish the current phase
  };

  MetricsListener(Fd listener, Fd stop, int port);
  void Serve();
  // Reads what `client` sent; false when it is done with (closed, too large, answered wrong).
  bool Receive(Client& client);
  // Sends what the socket takes of the answer; false when it is all out or the client left.
  bool Send(Client& client);

  Fd listener_;
  Fd stop_;  // eventfd: readable once the listener is closing
  int port_;
  std::thread thread_;
};

}  // namespace sandbox::mcp
