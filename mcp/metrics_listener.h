// The metrics listener: GET /metrics on an address of its own (SANDBOX_METRICS_ADDR), for a
// scraper on the node, and the only way to scrape a stdio server. It speaks just enough
// HTTP/1.1 for a scraper: one request per connection, answered and closed; heads larger than
// 8 KiB or slower than 5 s are dropped. No token: bind it to loopback or a node-local address
// (the HTTP listener's /metrics is the one behind SANDBOX_AUTH_TOKEN). One thread serves it,
// one scrape at a time.
#pragma once

#include <memory>
#include <string>
#include <thread>

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
  MetricsListener(Fd listener, Fd stop, int port);
  void Serve();
  void Answer(int client);

  Fd listener_;
  Fd stop_;  // eventfd: readable once the listener is closing
  int port_;
  std::thread thread_;
};

}  // namespace sandbox::mcp
