#include "mcp/metrics_listener.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/metrics/exposition.h"
#include "runtime/metrics/sandbox_metrics.h"

namespace sandbox::mcp {

namespace {

constexpr size_t kMaxHeadBytes = 8 << 10;
constexpr int kHeadTimeoutMs = 5000;

std::string Response(int status, std::string_view reason, std::string_view content_type,
                     std::string_view body) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
      status, reason, content_type, body.size(), body);
}

}  // namespace

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  ListenAddress address;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Fail(ErrorCode::kInvalidArgument, "expected [IPV6]:PORT, e.g. [::1]:9464");
    }
    address.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      return Fail(ErrorCode::kInvalidArgument, "expected HOST:PORT, e.g. 127.0.0.1:9464");
    }
    address.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (address.host.empty() || address.host.find_first_of(" \t\r\n/") != std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "expected HOST:PORT, e.g. 127.0.0.1:9464");
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
    return Fail(ErrorCode::kInvalidArgument, "the port must be a number from 0 to 65535");
  }
  address.port = std::stoi(port);
  return address;
}

Result<std::unique_ptr<MetricsListener>> MetricsListener::Start(const ListenAddress& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(address.port);
  if (int rc = ::getaddrinfo(address.host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Fail(ErrorCode::kInvalidArgument, "metrics address {}: {}", address.host,
                ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(found, &::freeaddrinfo);
  Fd listener(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) return FailSys("socket");
  int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener.get(), found->ai_addr, found->ai_addrlen) != 0) {
    return FailSys("bind", fmt::format("metrics listener {}:{}", address.host, address.port));
  }
  if (::listen(listener.get(), 16) != 0) return FailSys("listen");
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  Fd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return FailSys("eventfd");
  return std::unique_ptr<MetricsListener>(
      new MetricsListener(std::move(listener), std::move(stop), port));
}

MetricsListener::MetricsListener(Fd listener, Fd stop, int port)
    : listener_(std::move(listener)), stop_(std::move(stop)), port_(port) {
  thread_ = std::thread([this] { Serve(); });
}

MetricsListener::~MetricsListener() {
  uint64_t one = 1;
  ssize_t written = ::write(stop_.get(), &one, sizeof one);
  (void)written;
  if (thread_.joinable()) thread_.join();
}

void MetricsListener::Serve() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("metrics listener: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    Fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) {
      // EMFILE and the like: wait a moment (or for the stop) rather than spin.
      pollfd stop = {stop_.get(), POLLIN, 0};
      ::poll(&stop, 1, 100);
      continue;
    }
    Answer(client.get());
  }
}

void MetricsListener::Answer(int client) {
  std::string head;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHeadTimeoutMs);
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (head.size() > kMaxHeadBytes) return;  // not a scraper: drop it
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return;
    pollfd fds[2] = {{client, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left)) <= 0 || fds[1].revents != 0) return;
    char buffer[2048];
    ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    head.append(buffer, static_cast<size_t>(n));
  }
  std::string_view line(head.data(), head.find("\r\n"));
  std::string answer;
  if (line.rfind("GET ", 0) != 0) {
    answer = Response(405, "Method Not Allowed", "text/plain", "only GET\n");
  } else {
    std::string_view target = line.substr(4, line.find(' ', 4) - 4);
    target = target.substr(0, target.find('?'));
    answer = target == "/metrics"
                 ? Response(200, "OK", metrics::kTextContentType, metrics::Scrape())
                 : Response(404, "Not Found", "text/plain", "not found; try /metrics\n");
  }
  // A scraper that stops reading is cut off by the socket's send timeout.
  timeval timeout{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  // MSG_NOSIGNAL: a scraper that left must not raise SIGPIPE in the server.
  for (size_t sent = 0; sent < answer.size();) {
    ssize_t n = ::send(client, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace sandbox::mcp
