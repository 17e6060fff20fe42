#include "runtime/docker/hijacked_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "runtime/docker/engine_error.h"

namespace sandbox::docker {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

Status SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailSys("send", "attach request");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// Reads what is available into `buffer`; 0 means EOF.
Result<size_t> ReadSome(int fd, std::string* buffer, Clock::time_point deadline) {
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, MillisLeft(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return FailSys("poll", "attach connection");
    }
    if (ready == 0) {
      return Fail(ErrorCode::kSandboxUnavailable, "the Docker daemon did not answer in time");
    }
    char chunk[4096];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return FailSys("recv", "attach connection");
    }
    buffer->append(chunk, static_cast<size_t>(n));
    return static_cast<size_t>(n);
  }
}

bool HeaderNameIs(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

}  // namespace

Result<ResponseHead> ParseResponseHead(std::string_view head) {
  ResponseHead parsed;
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(status_line[9])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[10])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[11]))) {
    return Fail(ErrorCode::kSandboxUnavailable, "not an HTTP response: '{}'",
                status_line.substr(0, 80));
  }
  parsed.status =
      (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 + (status_line[11] - '0');
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    std::string_view line = head.substr(start, line_end - start);
    if (HeaderNameIs(line, "content-length")) {
      std::string value(line.substr(15));
      parsed.content_length = std::strtol(value.c_str(), nullptr, 10);
    }
  }
  return parsed;
}

Result<HijackedConnection> OpenHijacked(const std::string& socket_path, const std::string& target,
                                        std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof address.sun_path) {
    return Fail(ErrorCode::kInvalidArgument, "socket path too long: {}", socket_path);
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return FailSys("socket", "AF_UNIX");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    Error error = SysError("connect", socket_path);
    error.code = ErrorCode::kSandboxUnavailable;
    return Fail(std::move(error));
  }
  std::string request = fmt::format(
      "POST {} HTTP/1.1\r\nHost: docker\r\nUser-Agent: mcp-sandbox\r\nContent-Length: 0\r\n"
      "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
      target);
  SBX_TRY(SendAll(fd.get(), request).map_error([&](const Error& e) { return e.Context(target); }));

  std::string received;
  size_t head_end;
  while ((head_end = received.find("\r\n\r\n")) == std::string::npos) {
    if (received.size() > 64 * 1024) {
      return Fail(ErrorCode::kSandboxUnavailable, "{}: response head too large", target);
    }
    SBX_ASSIGN_OR_RETURN(size_t n, ReadSome(fd.get(), &received, deadline));
    if (n == 0) {
      return Fail(ErrorCode::kSandboxUnavailable, "{}: the Docker daemon closed the connection",
                  target);
    }
  }
  SBX_ASSIGN_OR_RETURN(ResponseHead head, ParseResponseHead(received.substr(0, head_end)));
  std::string rest = received.substr(head_end + 4);
  if (head.status == 101 || head.status == 200) {
    return HijackedConnection{std::move(fd), std::move(rest)};
  }
  // An error: read its body (bounded) for the daemon's message.
  while (head.content_length < 0 || rest.size() < static_cast<size_t>(head.content_length)) {
    if (rest.size() > 64 * 1024) break;
    auto n = ReadSome(fd.get(), &rest, deadline);
    if (!n || *n == 0) break;
  }
  return Fail(EngineError(fmt::format("POST {}", target), head.status, rest));
}

}  // namespace sandbox::docker
