#include "runtime/egress/egress_proxy.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/base/quoted.h"
#include "runtime/egress/proxy_request.h"
#include "runtime/metrics/sandbox_metrics.h"

namespace sandbox::egress {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBufferBytes = 64 << 10;

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

bool SendAll(int fd, std::string_view data, int stop_fd, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return false;
    struct pollfd fds[2] = {{fd, POLLOUT, 0}, {stop_fd, POLLIN, 0}};
    int ready = ::poll(fds, 2, MillisUntil(deadline));
    if (ready <= 0 || fds[1].revents != 0) return false;
  }
  return true;
}

std::string StatusText(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

// A non-blocking connect to `address`, waiting until `deadline` or `stop_fd`; errno-like code.
int Dial(const struct sockaddr* address, socklen_t length, int stop_fd, Clock::time_point deadline,
         Fd* out) {
  Fd fd(::socket(address->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return errno;
  if (::connect(fd.get(), address, length) != 0) {
    if (errno != EINPROGRESS) return errno;
    struct pollfd fds[2] = {{fd.get(), POLLOUT, 0}, {stop_fd, POLLIN, 0}};
    int ready = ::poll(fds, 2, MillisUntil(deadline));
    if (ready == 0) return ETIMEDOUT;
    if (ready < 0) return errno;
    if (fds[1].revents != 0) return ECANCELED;
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
    if (error != 0) return error;
  }
  *out = std::move(fd);
  return 0;
}

}  // namespace

Result<std::unique_ptr<EgressProxy>> EgressProxy::Start(std::string session_id, Allowlist allowlist,
                                                        EgressLimits limits, Fd channel,
                                                        uint64_t* published) {
  Fd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return FailSys("eventfd", "egress proxy");
  std::unique_ptr<EgressProxy> proxy(new EgressProxy(std::move(session_id), std::move(allowlist),
                                                     limits, std::move(channel), std::move(stop),
                                                     published));
  proxy->reader_ = std::thread([raw = proxy.get()] { raw->ReadChannel(); });
  return proxy;
}

EgressProxy::EgressProxy(std::string session_id, Allowlist allowlist, EgressLimits limits,
                         Fd channel, Fd stop, uint64_t* published)
    : session_id_(std::move(session_id)),
      allowlist_(std::move(allowlist)),
      limits_(limits),
      channel_(std::move(channel)),
      stop_(std::move(stop)),
      published_(published),
      log_(session_id_, limits_.log) {}

void EgressProxy::Shutdown() {
  // The eventfd is never read: once written it stays readable, so every poll sees it.
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
}

EgressProxy::~EgressProxy() {
  Shutdown();
  if (reader_.joinable()) reader_.join();
  ReapFinished(/*all=*/true);
}

EgressUsage EgressProxy::Usage() const {
  EgressUsage usage;
  usage.bytes = std::min(bytes_.load(), limits_.max_bytes);
  usage.connections = connections_.load();
  usage.refused = refused_.load();
  usage.open = open_.load();
  usage.byte_limit_reached = byte_limit_reached_.load();
  return usage;
}

void EgressProxy::ReapFinished(bool all) {
  std::list<Tunnel> finished;
  {
    std::lock_guard<std::mutex> lock(tunnels_mutex_);
    for (auto it = tunnels_.begin(); it != tunnels_.end();) {
      auto next = std::next(it);
      if (all || it->done.load()) finished.splice(finished.end(), tunnels_, it);
      it = next;
    }
  }
  for (Tunnel& tunnel : finished) tunnel.thread.join();
}

void EgressProxy::ReadChannel() {
  for (;;) {
    struct pollfd fds[2] = {{channel_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    // Wake when a summary of counted log lines is due, even if the sandbox goes quiet.
    std::optional<Clock::time_point> summary_due = log_.Flush();
    int ready = ::poll(fds, 2, summary_due ? MillisUntil(*summary_due) + 1 : -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      spdlog::error("egress {}: poll: {}", session_id_, ErrnoName(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if (ready == 0) continue;
    char byte = 0;
    struct iovec iov = {&byte, 1};
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    struct msghdr message = {};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(channel_.get(), &message, MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;  // the sandbox is gone
    Fd client;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
          c->cmsg_len == CMSG_LEN(sizeof(int))) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
        client.Reset(fd);
      }
    }
    // Truncated control data would have closed what did not fit; anything but one socket is
    // not from our relay.
    if (!client || (message.msg_flags & MSG_CTRUNC) != 0) continue;
    int type = 0;
    socklen_t size = sizeof type;
    if (::getsockopt(client.get(), SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) {
      continue;
    }
    ReapFinished(/*all=*/false);
    SetNonBlocking(client.get());
    if (open_.load() >= static_cast<uint32_t>(limits_.max_connections)) {
      Refuse(client.get(), 503, "-",
             fmt::format("egress refused: {} connections are open, the most a session may have",
                         limits_.max_connections));
      continue;
    }
    open_.fetch_add(1);
    std::lock_guard<std::mutex> lock(tunnels_mutex_);
    Tunnel& tunnel = tunnels_.emplace_back();
    tunnel.thread = std::thread([this, &tunnel, fd = client.Release()] {
      Serve(Fd(fd));
      open_.fetch_sub(1);
      tunnel.done.store(true);
    });
  }
}

void EgressProxy::Refuse(int client, int status, const std::string& target,
                         const std::string& reason) {
  refused_.fetch_add(1);
  metrics::EgressConnection(/*allowed=*/false);
  // `reason` is the proxy's own words (names it judged, never raw request bytes), so it can go in
  // the status line as it is; `target` is the sandbox's and is quoted.
  log_.Write(spdlog::level::warn, fmt::format("refused ({})", status),
             fmt::format("{} refused ({}): {}", Quoted(target, 200), status, reason));
  const std::string& line = reason;
  std::string body = line + "\n";
  // The reason goes in the status line too: Python's CONNECT code (http.client, so pip and
  // requests) reports "Tunnel connection failed: <status> <reason>" and drops the body.
  std::string response = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
      "Connection: close\r\nX-Sandbox-Egress: refused\r\n\r\n{}",
      status, line.empty() ? StatusText(status) : line, body.size(), body);
  (void)SendAll(client, response, stop_.get(), Clock::now() + std::chrono::seconds(5));
}

size_t EgressProxy::Reserve(size_t want) {
  uint64_t before = bytes_.fetch_add(want);
  if (before >= limits_.max_bytes) {
    bytes_.fetch_sub(want);
    byte_limit_reached_.store(true);
    return 0;
  }
  size_t granted = static_cast<size_t>(std::min<uint64_t>(want, limits_.max_bytes - before));
  if (granted < want) bytes_.fetch_sub(want - granted);
  return granted;
}

void EgressProxy::Unreserve(size_t unused) {
  if (unused != 0) bytes_.fetch_sub(unused);
}

void EgressProxy::CountCarried(uint64_t bytes) {
  metrics::EgressBytes(bytes);
  if (published_ != nullptr) {
    std::atomic_ref<uint64_t>(*published_).fetch_add(bytes, std::memory_order_relaxed);
  }
}

void EgressProxy::Serve(Fd client) {
  const int stop = stop_.get();
  // 1. The request head.
  std::string data;
  const auto head_deadline = Clock::now() + limits_.head_timeout;
  std::optional<size_t> head_end;
  while (!(head_end = FindHeadEnd(data))) {
    if (data.size() >= kMaxRequestHead) {
      Refuse(client.get(), 431, "-", "egress refused: the request head is too large");
      return;
    }
    struct pollfd fds[2] = {{client.get(), POLLIN, 0}, {stop, POLLIN, 0}};
    int ready = ::poll(fds, 2, MillisUntil(head_deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      Refuse(client.get(), 408, "-", "egress refused: no request head in time");
      return;
    }
    if (ready < 0 || fds[1].revents != 0) return;
    char buffer[4096];
    ssize_t n =
        ::recv(client.get(), buffer, std::min(sizeof buffer, kMaxRequestHead - data.size()), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    data.append(buffer, static_cast<size_t>(n));
  }
  std::string_view head(data.data(), *head_end);
  std::string early(data.substr(*head_end));  // bytes the client sent past the head

  int status = 400;
  std::string why;
  auto request = ParseProxyRequest(head, &status, &why);
  if (!request) {
    Refuse(client.get(), status, "-", "egress refused: " + why);
    return;
  }
  if (bytes_.load() >= limits_.max_bytes) {
    byte_limit_reached_.store(true);
    Refuse(client.get(), 403, "-",
           fmt::format("egress refused: the session's egress byte limit ({}) is used up",
                       limits_.max_bytes));
    return;
  }
  const bool v6_literal = request->host.find(':') != std::string::npos;
  const std::string target =
      fmt::format("{}{}:{}", request->tunnel ? "CONNECT " : "http ",
                  v6_literal ? "[" + request->host + "]" : request->host, request->port);

  // 2. The name, then every address, judged; only judged addresses are dialled.
  struct Candidate {
    struct sockaddr_storage address;
    socklen_t length;
    std::string text;
  };
  std::vector<Candidate> candidates;
  std::string refusal;
  if (auto literal = ParseIpLiteral(request->host)) {
    if (!allowlist_.AllowsAddress(*literal, request->port)) {
      Refuse(client.get(), 403, target,
             fmt::format("egress refused: IP address {} port {} is not on the allowlist (IP "
                         "literals need an IP or CIDR entry)",
                         literal->ToString(), request->port));
      return;
    }
    Candidate candidate{};
    if (literal->v6) {
      auto* in6 = reinterpret_cast<struct sockaddr_in6*>(&candidate.address);
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(request->port);
      std::memcpy(in6->sin6_addr.s6_addr, literal->bytes.data(), 16);
      candidate.length = sizeof *in6;
    } else {
      auto* in4 = reinterpret_cast<struct sockaddr_in*>(&candidate.address);
      in4->sin_family = AF_INET;
      in4->sin_port = htons(request->port);
      std::memcpy(&in4->sin_addr.s_addr, literal->bytes.data(), 4);
      candidate.length = sizeof *in4;
    }
    candidate.text = literal->ToString();
    candidates.push_back(candidate);
  } else {
    auto name = NormalizeHostName(request->host);
    if (!name) {
      Refuse(client.get(), 400, target, "egress refused: not a valid host name");
      return;
    }
    if (!allowlist_.AllowsName(*name, request->port)) {
      Refuse(
          client.get(), 403, target,
          fmt::format("egress refused: {} port {} is not on the allowlist", *name, request->port));
      return;
    }
    struct addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    struct addrinfo* found = nullptr;
    int rc = ::getaddrinfo(name->c_str(), std::to_string(request->port).c_str(), &hints, &found);
    if (rc != 0) {
      Refuse(client.get(), 502, target,
             fmt::format("egress: cannot resolve {}: {}", *name, ::gai_strerror(rc)));
      return;
    }
    std::unique_ptr<struct addrinfo, decltype(&::freeaddrinfo)> owner(found, ::freeaddrinfo);
    for (struct addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      auto address = IpAddress::FromSockaddr(ai->ai_addr);
      if (!address || ai->ai_addrlen > sizeof(struct sockaddr_storage)) continue;
      std::string_view special = SpecialPurpose(*address);
      if (!special.empty() && !allowlist_.AllowsAddress(*address, request->port)) {
        if (refusal.empty()) {
          refusal = fmt::format(
              "egress refused: {} resolves to {}, a {} address no IP or CIDR entry allows", *name,
              address->ToString(), special);
        }
        continue;
      }
      Candidate candidate{};
      std::memcpy(&candidate.address, ai->ai_addr, ai->ai_addrlen);
      candidate.length = ai->ai_addrlen;
      candidate.text = address->ToString();
      candidates.push_back(candidate);
    }
    if (candidates.empty()) {
      Refuse(client.get(), 403, target,
             refusal.empty() ? fmt::format("egress refused: {} has no usable address", *name)
                             : refusal);
      return;
    }
  }

  // 3. Dial the judged addresses in order.
  Fd upstream;
  std::string dialled;
  int last_error = 0;
  const auto connect_deadline = Clock::now() + limits_.connect_timeout;
  for (const Candidate& candidate : candidates) {
    last_error = Dial(reinterpret_cast<const struct sockaddr*>(&candidate.address),
                      candidate.length, stop, connect_deadline, &upstream);
    if (last_error == 0) {
      dialled = candidate.text;
      break;
    }
    if (last_error == ECANCELED) return;
  }
  if (!upstream) {
    Refuse(client.get(), last_error == ETIMEDOUT ? 504 : 502, target,
           fmt::format("egress: connect to {} port {}: {}", candidates.back().text, request->port,
                       ErrnoName(last_error)));
    return;
  }
  connections_.fetch_add(1);
  metrics::EgressConnection(/*allowed=*/true);
  log_.Write(spdlog::level::info, "tunnels opened",
             fmt::format("{} -> {}", Quoted(target, 200), dialled));

  // 4. Say yes (CONNECT) or forward the rewritten request, then carry bytes.
  const auto deadline = Clock::now() + limits_.idle_timeout;
  std::string first = request->tunnel ? std::string() : request->upstream_head;
  first += early;
  if (request->tunnel &&
      !SendAll(client.get(), "HTTP/1.1 200 Connection established\r\n\r\n", stop, deadline)) {
    return;
  }
  if (!first.empty()) {
    size_t granted = Reserve(first.size());
    if (granted < first.size() || !SendAll(upstream.get(), first, stop, deadline)) return;
    CountCarried(first.size());
  }
  Pump(client.get(), upstream.get(), target);
}

void EgressProxy::Pump(int client, int upstream, const std::string& target) {
  struct Direction {
    int from;
    int to;
    std::vector<char> buffer = std::vector<char>(kBufferBytes);
    size_t start = 0;
    size_t end = 0;
    bool eof = false;  // `from` closed and everything was written: `to` was shut for writing
  };
  Direction directions[2] = {{client, upstream}, {upstream, client}};
  std::string ended = "closed";
  for (;;) {
    if (directions[0].eof && directions[1].eof) break;
    struct pollfd fds[3] = {{client, 0, 0}, {upstream, 0, 0}, {stop_.get(), POLLIN, 0}};
    for (Direction& d : directions) {
      if (d.eof) continue;
      struct pollfd& from = fds[d.from == client ? 0 : 1];
      struct pollfd& to = fds[d.to == client ? 0 : 1];
      if (d.start == d.end) {
        from.events |= POLLIN;
      } else {
        to.events |= POLLOUT;
      }
    }
    int ready = ::poll(fds, 3, static_cast<int>(limits_.idle_timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      ended = "idle timeout";
      break;
    }
    if (ready < 0 || fds[2].revents != 0) {
      ended = "session closed";
      break;
    }
    bool failed = false;
    for (Direction& d : directions) {
      if (d.eof) continue;
      if (d.start == d.end) {
        size_t granted = Reserve(kBufferBytes);
        if (granted == 0) {
          ended = "byte limit reached";
          failed = true;
          break;
        }
        ssize_t n = ::recv(d.from, d.buffer.data(), granted, 0);
        Unreserve(granted - (n > 0 ? static_cast<size_t>(n) : 0));
        if (n > 0) {
          CountCarried(static_cast<uint64_t>(n));  // counted as the session's budget is
          d.start = 0;
          d.end = static_cast<size_t>(n);
        } else if (n == 0) {
          d.eof = true;
          ::shutdown(d.to, SHUT_WR);
          continue;
        } else if (errno != EAGAIN && errno != EINTR) {
          failed = true;
          break;
        }
      }
      if (d.start != d.end) {
        ssize_t n = ::send(d.to, d.buffer.data() + d.start, d.end - d.start, MSG_NOSIGNAL);
        if (n > 0) {
          d.start += static_cast<size_t>(n);
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          failed = true;
          break;
        }
      }
    }
    if (failed) break;
  }
  if (ended == "byte limit reached") {
    log_.Write(spdlog::level::warn, "tunnels closed at the byte limit",
               fmt::format("{} closed: the session's {} byte egress limit is reached",
                           Quoted(target, 200), limits_.max_bytes));
  } else {
    log_.Write(spdlog::level::debug, "tunnels ended",
               fmt::format("{} ended: {}", Quoted(target, 200), ended));
  }
}

}  // namespace sandbox::egress
