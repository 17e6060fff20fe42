// The HTTP server under hostile clients (issue #12 item 2), over loopback with raw sockets:
// heads too big or too slow, bodies sent without a token, too many connections from one
// peer, and an authorised client kept served while hundreds of connections idle.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/http_transport.h"
#include "tests/support/test_support.h"

namespace http_hostile_test {

using namespace sandbox::mcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kInit[] =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

struct Served {
  Server server{ServerOptions{}, {}};
  std::unique_ptr<HttpTransport> transport;
  std::thread serving;
  sandbox::Status served;

  explicit Served(HttpOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    transport = std::make_unique<HttpTransport>(server, options);
    REQUIRE(transport->Bind());
    serving = std::thread([this] { served = transport->Serve(); });
  }
  ~Served() {
    transport->Stop();
    serving.join();
    CHECK(served);
  }
  int port() const { return transport->port(); }
};

// A client socket with plain blocking calls and timeouts.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~Raw() {
    if (fd_ >= 0) ::close(fd_);
  }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  bool connected() const { return connected_; }
  // Sends all of `data` unless the peer closes or `wait` passes with nothing taken.
  bool Send(std::string_view data, std::chrono::milliseconds wait = 2000ms) {
    while (!data.empty()) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) return false;
      sent_ += static_cast<size_t>(n);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // What the server sends until it closes, or until `wait` passes. closed(): it closed.
  std::string Receive(std::chrono::milliseconds wait) {
    std::string out;
    auto deadline = Clock::now() + wait;
    char buffer[4096];
    while (Clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<long>(left.count(), 1))) <= 0) break;
      ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buffer, static_cast<size_t>(n));
      if (out.find("\r\n\r\n") != std::string::npos && until_head_) break;
    }
    return out;
  }
  void StopAtHead() { until_head_ = true; }
  bool closed() const { return closed_; }
  size_t sent() const { return sent_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  bool until_head_ = false;
  size_t sent_ = 0;
};

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0;
  size_t resident = 0;
  statm >> total >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

TEST_CASE("http hostile: too many header fields are refused with 431", "[unit]") {
  Served s(HttpOptions{});
  Raw raw(s.port());
  REQUIRE(raw.connected());
  std::string request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 500; ++i) request += "X-F" + std::to_string(i) + ": v\r\n";
  request += "\r\n";
  REQUIRE(raw.Send(request));
  std::string answer = raw.Receive(5000ms);
  CHECK(answer.rfind("HTTP/1.1 431", 0) == 0);
  CHECK(raw.closed());
}

TEST_CASE("http hostile: one endless header is cut, and the server does not grow", "[unit]") {
  Served s(HttpOptions{});
  Raw raw(s.port());
  REQUIRE(raw.connected());
  size_t before = ResidentBytes();
  auto start = Clock::now();
  raw.Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
  std::string chunk(64u << 10, 'a');
  // Today's limit is 32 KiB: the server stops reading long before 64 MiB.
  for (int i = 0; i < 1024 && raw.Send(chunk, 1000ms); ++i) {
  }
  std::string answer = raw.Receive(5000ms);
  INFO("sent " << raw.sent() << " bytes; answer: " << answer.substr(0, 40));
  // 431 when the answer survives the close, else a reset: the connection ends either way.
  CHECK((raw.closed() || answer.rfind("HTTP/1.1 431", 0) == 0));
  CHECK(raw.sent() < (48u << 20));
  CHECK(Clock::now() - start < 10s);
  CHECK(ResidentBytes() < before + (16u << 20));
}

TEST_CASE("http hostile: a body without the token is refused before it is read", "[unit]") {
  HttpOptions options;
  options.auth_tokens = {"s3cret-token-value"};
  options.max_body_bytes = 100u << 20;
  Served s(options);
  Raw raw(s.port());
  REQUIRE(raw.connected());
  raw.StopAtHead();
  // 60 MB declared, none of it sent: the answer must come from the head alone.
  REQUIRE(raw.Send(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
      "Content-Type: application/json\r\nContent-Length: 60000000\r\n\r\n"));
  std::string answer = raw.Receive(5000ms);
  CHECK(answer.rfind("HTTP/1.1 401", 0) == 0);
  CHECK(answer.find("WWW-Authenticate: Bearer") != std::string::npos);
  // And the same with the token: 100-continue-less clients send at once; the server waits.
  Raw good(s.port());
  good.StopAtHead();
  REQUIRE(good.Send(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
      "Content-Type: application/json\r\nAuthorization: Bearer s3cret-token-value\r\n"
      "Content-Length: 150000000\r\n\r\n"));
  CHECK(good.Receive(5000ms).rfind("HTTP/1.1 413", 0) == 0);
}

TEST_CASE("http hostile: a slowloris head is cut at the header deadline", "[unit]") {
  HttpOptions options;
  options.header_timeout = 1000ms;
  Served s(options);
  Raw raw(s.port());
  REQUIRE(raw.connected());
  auto start = Clock::now();
  raw.Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  // One byte every 100 ms: each read succeeds, only a deadline on the whole head can end it.
  while (Clock::now() - start < 6s && !raw.closed()) {
    if (!raw.Send("a", 100ms)) break;
    raw.Receive(100ms);
  }
  auto lasted = Clock::now() - start;
  CHECK(lasted < 5s);  // the loop gives up at 6 s: an uncut head lasts that long
  CHECK(lasted >= 900ms);
}

TEST_CASE("http hostile: connections per peer are capped", "[unit]") {
  HttpOptions options;
  options.max_connections_per_peer = 4;
  Served s(options);
  std::vector<std::unique_ptr<Raw>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<Raw>(s.port()));
    REQUIRE(held.back()->connected());
  }
  // The held ones are counted once accepted: the fifth is refused as soon as they are.
  std::string answer;
  bool refused = false;
  for (auto deadline = Clock::now() + 5s; Clock::now() < deadline && !refused;) {
    Raw extra(s.port());
    answer = extra.Receive(500ms);
    refused = extra.closed();
  }
  CHECK(refused);
  CHECK(answer.rfind("HTTP/1.1 503", 0) == 0);
  // A freed slot serves again.
  held.pop_back();
  bool served = false;
  for (auto deadline = Clock::now() + 5s; Clock::now() < deadline && !served;) {
    Raw again(s.port());
    again.StopAtHead();
    again.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    served = again.Receive(1000ms).rfind("HTTP/1.1 200", 0) == 0;
  }
  CHECK(served);
}

TEST_CASE("http hostile: 500 idle and half-sent connections do not starve a client", "[unit]") {
  struct rlimit files {};
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 1400) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  if (files.rlim_cur < 1400) sandbox::testing::SkipTest("RLIMIT_NOFILE below 1400 here");
  HttpOptions options;
  options.auth_tokens = {"tok"};
  Served s(options);
  std::vector<std::unique_ptr<Raw>> idle;
  for (int i = 0; i < 500; ++i) {
    idle.push_back(std::make_unique<Raw>(s.port()));
    REQUIRE(idle.back()->connected());
    // Half of them start a request and never finish it.
    if (i % 2 == 0) idle.back()->Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ");
  }
  std::vector<double> seconds;
  for (int round = 0; round < 20; ++round) {
    httplib::Client client("127.0.0.1", s.port());
    client.set_read_timeout(10, 0);
    httplib::Headers headers = {{"Accept", "application/json, text/event-stream"},
                                {"Authorization", "Bearer tok"}};
    auto start = Clock::now();
    auto init = client.Post("/mcp", headers, kInit, "application/json");
    REQUIRE(init);
    REQUIRE(init->status == 200);
    headers.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
    headers.emplace("MCP-Protocol-Version", "2025-11-25");
    auto list = client.Post("/mcp", headers, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
                            "application/json");
    REQUIRE(list);
    CHECK(list->status == 200);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  double p99 = seconds.back();  // 20 samples: the worst
  std::printf(
      "http hostile: initialize + tools/list under 500 idle connections: p50 %.4f s, "
      "max %.4f s\n",
      seconds[seconds.size() / 2], p99);
  CHECK(p99 < 5.0);
}

}  // namespace http_hostile_test
