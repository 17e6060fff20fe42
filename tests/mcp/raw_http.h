// A test's HTTP client that sees the bytes: it writes a request as given (any byte, a repeated
// header) and reads the answer as it came off the wire, so a test can assert what an HTTP
// library would hide (a header line the server did not mean to write).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>

namespace sandbox::mcp::testing {

// Connects to 127.0.0.1:`port`, sends `request`, and returns what comes back until the server
// closes or `wait` passes without a byte. "" when it cannot connect.
inline std::string RawExchange(int port, std::string_view request,
                               std::chrono::milliseconds wait = std::chrono::seconds(10)) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    for (size_t sent = 0; sent < request.size();) {
      ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) break;
      char buffer[16384];
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      answer.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return answer;
}

// The header section of a raw answer (status line and fields, up to the blank line).
inline std::string_view RawHead(std::string_view answer) {
  return answer.substr(0, answer.find("\r\n\r\n"));
}

// Whether any line of `answer` (split at CR or LF, as lenient clients and proxies split) starts
// with `name` followed by ':'.
inline bool HasHeaderLine(std::string_view answer, std::string_view name) {
  for (size_t start = 0; start <= answer.size();) {
    size_t end = answer.find_first_of("\r\n", start);
    std::string_view line = answer.substr(start, end == std::string_view::npos ? end : end - start);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ':') {
      return true;
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return false;
}

}  // namespace sandbox::mcp::testing
