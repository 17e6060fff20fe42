#include "mcp/metrics_listener.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mcp/http_response_writer.h"
#include "runtime/metrics/exposition.h"
#include "runtime/metrics/sandbox_metrics.h"

namespace sandbox::mcp {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHeadBytes = 8 << 10;
constexpr auto kPhaseTimeout = std::chrono::seconds(5);  // to send the head, to take the answer
constexpr size_t kMaxClients = 64;

std::string Response(int status, std::string content_type, std::string body) {
  HttpResponse response{.status = status,
                        .content_type = std::move(content_type),
                        .headers = {},
                        .body = std::move(body)};
  bool close = true;
  return SerializeOrServerError(response, &close);
}

// The answer to a request head (the request line is all a scraper's head needs).
std::string Answer(std::string_view head) {
  std::string_view line = head.substr(0, head.find("\r\n"));
  if (line.rfind("GET ", 0) != 0) return Response(405, "text/plain", "only GET\n");
  std::string_view target = line.substr(4, line.find(' ', 4) - 4);
  target = target.substr(0, target.find('?'));
  if (target != "/metrics") return Response(404, "text/plain", "not found; try /metrics\n");
  return Response(200, std::string(metrics::kTextContentType), metrics::Scrape());
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
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  for (;;) {
    // The stop, the listener while there is room, then every client: reading its head, or
    // writing its answer.
    fds.clear();
    fds.push_back({stop_.get(), POLLIN, 0});
    fds.push_back(
        {listener_.get(), static_cast<short>(clients.size() < kMaxClients ? POLLIN : 0), 0});
    auto now = Clock::now();
    auto next_deadline = now + std::chrono::hours(1);
    for (const Client& client : clients) {
      fds.push_back(
          {client.fd.get(), static_cast<short>(client.answer.empty() ? POLLIN : POLLOUT), 0});
      next_deadline = std::min(next_deadline, client.deadline);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - now).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0) + 1)) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("metrics listener: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    // Clients first (their pollfds follow the two fixed ones in the same order), then a new one.
    now = Clock::now();
    size_t kept = 0;
    for (size_t i = 0; i < clients.size(); ++i) {
      Client& client = clients[i];
      short events = fds[i + 2].revents;
      bool keep = now < client.deadline;
      if (keep && events != 0) keep = client.answer.empty() ? Receive(client) : Send(client);
      if (keep) {
        if (kept != i) clients[kept] = std::move(client);
        ++kept;
      }
    }
    clients.resize(kept);
    if ((fds[1].revents & POLLIN) != 0) {
      Fd accepted(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (accepted) {
        clients.push_back({.fd = std::move(accepted),
                           .head = {},
                           .answer = {},
                           .sent = 0,
                           .deadline = Clock::now() + kPhaseTimeout});
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
        // EMFILE and the like: wait a moment (or for the stop) rather than spin.
        pollfd stop = {stop_.get(), POLLIN, 0};
        ::poll(&stop, 1, 100);
      }
    }
  }
}

bool MetricsListener::Receive(Client& client) {
  char buffer[2048];
  ssize_t n = ::recv(client.fd.get(), buffer, sizeof buffer, 0);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n == 0) return false;  // gone before its head was whole
  client.head.append(buffer, static_cast<size_t>(n));
  if (client.head.find("\r\n\r\n") == std::string::npos) {
    return client.head.size() <= kMaxHeadBytes;  // not a scraper: drop it
  }
  client.answer = Answer(client.head);
  client.deadline = Clock::now() + kPhaseTimeout;  // a scraper that stops reading is cut off
  return Send(client);
}

bool MetricsListener::Send(Client& client) {
  while (client.sent < client.answer.size()) {
    // MSG_NOSIGNAL: a scraper that left must not raise SIGPIPE in the server.
    ssize_t n = ::send(client.fd.get(), client.answer.data() + client.sent,
                       client.answer.size() - client.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    client.sent += static_cast<size_t>(n);
  }
  return false;  // all out: closed
}

}  // namespace sandbox::mcp
