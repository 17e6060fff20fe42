// The head of a request a client in the sandbox sends to its HTTP proxy, parsed: either
// `CONNECT host:port HTTP/1.x` (a tunnel, TLS or anything) or a plain-HTTP request with an
// absolute URI (`GET http://host[:port]/path HTTP/1.1`), which is rewritten to origin form for
// the server it names. Pure text, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox::egress {

// The most a request head may take before the proxy answers 431.
inline constexpr size_t kMaxRequestHead = 16 << 10;

struct ProxyRequest {
  bool tunnel = false;  // CONNECT
  std::string host;     // as written, without brackets (a name or an IP literal)
  uint16_t port = 0;
  // Plain HTTP: the head to send upstream (origin-form target, the proxy's own headers
  // dropped, `Connection: close`). Empty for CONNECT.
  std::string upstream_head;
};

// Where a request head ends ("\r\n\r\n" or "\n\n"): the offset just past it, or nullopt.
std::optional<size_t> FindHeadEnd(std::string_view data);

// Parses a complete head; on failure `why` says what is wrong and `status` the HTTP status to
// answer (400, 405 or 501).
std::optional<ProxyRequest> ParseProxyRequest(std::string_view head, int* status, std::string* why);

}  // namespace sandbox::egress
