// The proxy over a real channel, against real servers on this machine's loopback. The sandbox's
// side (the relay passing sockets) is played by the test: it passes one end of a socketpair.
#include "runtime/egress/egress_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/base/fd_ops.h"
#include "tests/support/log_capture.h"

namespace sandbox::egress::egress_proxy_test {
namespace {

using namespace std::chrono_literals;

// A TCP server on 127.0.0.1 (ephemeral port) that answers each connection with `handler`.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<void(int)> handler) : handler_(std::move(handler)) {
    listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_.get(), 16) == 0);
    socklen_t size = sizeof address;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        if (stopping_) {
          ::close(fd);
          return;
        }
        // Joined, not detached: a handler must not outlive the server (and the test frame
        // its handler refers to). Its fd is closed only after the join, so it is never reused
        // under a handler still running.
        std::lock_guard<std::mutex> lock(mutex_);
        accepted_.push_back(fd);
        handlers_.emplace_back([this, fd] {
          handler_(fd);
          ::shutdown(fd, SHUT_RDWR);  // the peer sees EOF now, as it did with a close
        });
      }
    });
  }
  ~LoopbackServer() {
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : accepted_) ::shutdown(fd, SHUT_RDWR);  // ends every handler's recv/send
    for (auto& handler : handlers_) handler.join();
    for (int fd : accepted_) ::close(fd);
  }
  uint16_t port() const { return port_; }

 private:
  std::function<void(int)> handler_;
  Fd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::vector<int> accepted_;  // guarded by mutex_
  std::vector<std::thread> handlers_;
  std::thread thread_;
};

void Echo(int fd) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    if (::send(fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return;
  }
}

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    REQUIRE(n > 0);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads until `marker` is in what was read, EOF, or 5 s.
std::string ReadUntil(int fd, std::string_view marker) {
  std::string data;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (data.find(marker) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    char buffer[65536];
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  return data;
}

std::string ReadToEof(int fd) { return ReadUntil(fd, std::string_view("\0never\0", 7)); }

struct ProxyUnderTest {
  Fd relay;  // the sandbox's end of the channel
  std::unique_ptr<EgressProxy> proxy;

  explicit ProxyUnderTest(const std::string& allow, EgressLimits limits = {}) {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
    relay = Fd(pair[0]);
    auto list = Allowlist::Parse(allow);
    REQUIRE(list);
    auto started = EgressProxy::Start("sess_test", std::move(*list), limits, Fd(pair[1]));
    REQUIRE(started);
    proxy = std::move(*started);
  }

  // What the relay does for one accepted connection: passes the socket, keeps nothing.
  Fd Connect() {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    Fd passed(pair[1]);
    int fd = passed.get();
    REQUIRE(SendFds(relay.get(), std::span<const int>(&fd, 1), 'c'));
    return Fd(pair[0]);
  }

  // CONNECT `authority`; returns the status line.
  std::string Tunnel(Fd& client, const std::string& authority) {
    client = Connect();
    SendAll(client.get(), "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    std::string head = ReadUntil(client.get(), "\r\n\r\n");
    return head.substr(0, head.find("\r\n"));
  }
};

TEST_CASE("egress proxy: CONNECT to an allowed address carries bytes both ways", "[unit]") {
  LoopbackServer echo(Echo);
  ProxyUnderTest p("127.0.0.1/32");
  Fd client;
  CHECK(p.Tunnel(client, "127.0.0.1:" + std::to_string(echo.port())) ==
        "HTTP/1.1 200 Connection established");
  SendAll(client.get(), "ping\n");
  CHECK(ReadUntil(client.get(), "\n") == "ping\n");
  CHECK(p.proxy->Usage().connections == 1);
  CHECK(p.proxy->Usage().bytes == 10);
}

TEST_CASE("egress proxy: names, ports and addresses outside the list get 403 and a reason",
          "[unit]") {
  LoopbackServer echo(Echo);
  const std::string port = std::to_string(echo.port());
  ProxyUnderTest p("localhost:" + port + ",pypi.org");
  Fd client;
  // An IP literal needs an IP/CIDR entry, in any spelling.
  for (std::string literal : {"127.0.0.1", "127.1", "0x7f000001", "2130706433", "[::1]"}) {
    INFO(literal);
    std::string status = p.Tunnel(client, literal + ":" + port);
    CHECK(status.starts_with("HTTP/1.1 403 egress refused: IP address"));
  }
  // A listed name that resolves to loopback, with no CIDR entry for it.
  CHECK(p.Tunnel(client, "localhost:" + port) ==
        "HTTP/1.1 403 egress refused: localhost resolves to 127.0.0.1, a loopback address no "
        "IP or CIDR entry allows");
  // A name that is not listed, and a listed name on a port that is not.
  CHECK(p.Tunnel(client, "example.com:443") ==
        "HTTP/1.1 403 egress refused: example.com port 443 is not on the allowlist");
  CHECK(p.Tunnel(client, "pypi.org:22") ==
        "HTTP/1.1 403 egress refused: pypi.org port 22 is not on the allowlist");
  CHECK(p.Tunnel(client, "local\x01host:80").starts_with("HTTP/1.1 400"));
  CHECK(p.proxy->Usage().refused == 9);
  CHECK(p.proxy->Usage().connections == 0);
}

TEST_CASE("egress proxy: a CIDR entry lets a listed name reach a private address", "[unit]") {
  LoopbackServer echo(Echo);
  const std::string port = std::to_string(echo.port());
  ProxyUnderTest p("localhost:" + port + ",127.0.0.0/8");
  Fd client;
  CHECK(p.Tunnel(client, "localhost:" + port) == "HTTP/1.1 200 Connection established");
  SendAll(client.get(), "x");
  CHECK(ReadUntil(client.get(), "x") == "x");
}

TEST_CASE("egress proxy: a plain-HTTP request is forwarded in origin form", "[unit]") {
  std::atomic<bool> saw_origin_form{false};
  LoopbackServer http([&](int fd) {
    std::string head = ReadUntil(fd, "\r\n\r\n");
    saw_origin_form = head.starts_with("GET /simple/ HTTP/1.1\r\n") &&
                      head.find("Connection: close\r\n") != std::string::npos &&
                      head.find("Proxy-Connection") == std::string::npos;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  });
  ProxyUnderTest p("127.0.0.1");
  Fd client = p.Connect();
  std::string authority = "127.0.0.1:" + std::to_string(http.port());
  SendAll(client.get(), "GET http://" + authority + "/simple/ HTTP/1.1\r\nHost: " + authority +
                            "\r\nProxy-Connection: keep-alive\r\n\r\n");
  std::string response = ReadToEof(client.get());
  CHECK(response.starts_with("HTTP/1.1 200 OK"));
  CHECK(response.ends_with("hello"));
  CHECK(saw_origin_form);
}

TEST_CASE("egress proxy: the byte cap closes the tunnel and refuses new ones", "[unit]") {
  LoopbackServer echo(Echo);
  EgressLimits limits;
  limits.max_bytes = 100000;
  ProxyUnderTest p("127.0.0.1", limits);
  Fd client;
  REQUIRE(p.Tunnel(client, "127.0.0.1:" + std::to_string(echo.port())) ==
          "HTTP/1.1 200 Connection established");
  std::thread writer([fd = client.get()] {
    std::string chunk(16384, 'z');
    for (int i = 0; i < 64; ++i) {
      if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) <= 0) return;
    }
  });
  std::string echoed = ReadToEof(client.get());
  writer.join();
  CHECK(echoed.size() < 100000);
  EgressUsage usage = p.proxy->Usage();
  CHECK(usage.byte_limit_reached);
  CHECK(usage.bytes == 100000);
  Fd again;
  CHECK(p.Tunnel(again, "127.0.0.1:" + std::to_string(echo.port()))
            .starts_with("HTTP/1.1 403 egress refused: the session's egress byte limit"));
}

TEST_CASE("egress proxy: tunnels at once are capped, and closing the proxy closes them", "[unit]") {
  LoopbackServer echo(Echo);
  EgressLimits limits;
  limits.max_connections = 1;
  ProxyUnderTest p("127.0.0.1", limits);
  Fd first;
  REQUIRE(p.Tunnel(first, "127.0.0.1:" + std::to_string(echo.port())) ==
          "HTTP/1.1 200 Connection established");
  Fd second = p.Connect();
  CHECK(ReadToEof(second.get()).starts_with("HTTP/1.1 503 egress refused"));
  auto t0 = std::chrono::steady_clock::now();
  p.proxy.reset();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK(ReadToEof(first.get()).empty());  // EOF: the tunnel is gone
}

TEST_CASE("egress proxy: a flood of 600 connections is held to the cap and its log stays small",
          "[unit]") {
  testing::LogCapture log(spdlog::level::info);
  ProxyUnderTest p("127.0.0.1");  // the default limits: 32 tunnels at once
  // Like a cell that opens 600 connections at once and sends nothing: 32 wait for their request
  // head, every other one is refused with 503.
  std::vector<Fd> clients;
  for (int i = 0; i < 600; ++i) clients.push_back(p.Connect());
  for (int i = 0; i < 500 && p.proxy->Usage().refused < 568; ++i) std::this_thread::sleep_for(10ms);
  CHECK(p.proxy->Usage().refused == 568);
  CHECK(p.proxy->Usage().open == 32);
  CHECK(ReadToEof(clients.back().get()).starts_with("HTTP/1.1 503 egress refused"));
  p.proxy.reset();  // writes the summary of what it counted
  std::string text = log.Text();
  INFO(text);
  // One warning line per refusal was 76-82 KB for such a flood.
  CHECK(text.size() < 4096);
  CHECK(text.find("refused (503)") != std::string::npos);
  CHECK(text.find("not logged one by one") != std::string::npos);
}

TEST_CASE("egress proxy: an idle tunnel is closed", "[unit]") {
  LoopbackServer echo(Echo);
  EgressLimits limits;
  limits.idle_timeout = 300ms;
  ProxyUnderTest p("127.0.0.1", limits);
  Fd client;
  REQUIRE(p.Tunnel(client, "127.0.0.1:" + std::to_string(echo.port())) ==
          "HTTP/1.1 200 Connection established");
  auto t0 = std::chrono::steady_clock::now();
  CHECK(ReadToEof(client.get()).empty());
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
}

TEST_CASE("egress proxy: garbage gets 400, not a crash", "[unit]") {
  ProxyUnderTest p("127.0.0.1");
  Fd client = p.Connect();
  SendAll(client.get(), std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15));
  CHECK(ReadToEof(client.get()).starts_with("HTTP/1.1 400"));
  Fd huge = p.Connect();
  std::string big = "GET http://x/ HTTP/1.1\r\nX: " + std::string(20000, 'a');
  (void)::send(huge.get(), big.data(), big.size(), MSG_NOSIGNAL);
  CHECK(ReadToEof(huge.get()).starts_with("HTTP/1.1 431"));
}

}  // namespace
}  // namespace sandbox::egress::egress_proxy_test
