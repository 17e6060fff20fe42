#include "runtime/egress/proxy_request.h"

#include <charconv>
#include <vector>

namespace sandbox::egress {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

// "host:port", "[v6]:port", or without a port (then `default_port`). False on bad syntax.
bool SplitAuthority(std::string_view authority, uint16_t default_port, std::string* host,
                    uint16_t* port) {
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port_text = rest.substr(1);
    }
  } else {
    size_t colon = authority.find(':');
    *host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (colon != std::string_view::npos && port_text.empty()) return false;
  }
  if (host->empty()) return false;
  if (port_text.empty()) {
    *port = default_port;
    return default_port != 0;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
      value > 65535) {
    return false;
  }
  *port = static_cast<uint16_t>(value);
  return true;
}

// Headers a proxy consumes and must not forward (RFC 9110 §7.6.1), plus Connection, which the
// proxy sets itself: one request per upstream connection.
bool IsProxyOwnHeader(std::string_view name) {
  for (std::string_view own : {"connection", "proxy-connection", "proxy-authorization",
                               "keep-alive", "proxy-authenticate"}) {
    if (EqualsIgnoreCase(name, own)) return true;
  }
  return false;
}

}  // namespace

std::optional<size_t> FindHeadEnd(std::string_view data) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != '\n') continue;
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return std::nullopt;
}

std::optional<ProxyRequest> ParseProxyRequest(std::string_view head, int* status,
                                              std::string* why) {
  *status = 400;
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
    if (line.empty()) break;
    lines.push_back(line);
  }
  if (lines.empty()) {
    *why = "empty request";
    return std::nullopt;
  }
  std::string_view request_line = lines[0];
  size_t sp1 = request_line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    *why = "malformed request line";
    return std::nullopt;
  }
  std::string_view method = request_line.substr(0, sp1);
  std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = request_line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    *why = "only HTTP/1.0 and HTTP/1.1 requests";
    *status = 505;
    return std::nullopt;
  }
  for (char c : method) {
    if (c < 'A' || c > 'Z') {
      *why = "malformed method";
      return std::nullopt;
    }
  }

  ProxyRequest request;
  if (method == "CONNECT") {
    request.tunnel = true;
    if (!SplitAuthority(target, 0, &request.host, &request.port)) {
      *why = "CONNECT needs host:port";
      return std::nullopt;
    }
    return request;
  }

  constexpr std::string_view kHttp = "http://";
  if (target.size() < kHttp.size() || !EqualsIgnoreCase(target.substr(0, kHttp.size()), kHttp)) {
    if (target.size() >= 8 && EqualsIgnoreCase(target.substr(0, 8), "https://")) {
      *why = "https:// goes through CONNECT, not as a plain request";
    } else {
      *why = "this is a proxy: the request needs an absolute http:// URI or CONNECT";
    }
    return std::nullopt;
  }
  std::string_view rest = target.substr(kHttp.size());
  size_t path_start = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_start);
  if (authority.find('@') != std::string_view::npos) {
    *why = "credentials in the URI are not forwarded";
    return std::nullopt;
  }
  if (!SplitAuthority(authority, 80, &request.host, &request.port)) {
    *why = "malformed host in the URI";
    return std::nullopt;
  }
  std::string path =
      path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (path.front() != '/') path.insert(0, "/");
  if (size_t hash = path.find('#'); hash != std::string::npos) path.resize(hash);

  std::string out;
  out.append(method).append(" ").append(path).append(" ").append(version).append("\r\n");
  bool has_host = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || line.front() == ' ' ||
        line.front() == '\t') {
      *why = "malformed header line";
      return std::nullopt;
    }
    std::string_view name = line.substr(0, colon);
    if (IsProxyOwnHeader(name)) continue;
    if (EqualsIgnoreCase(name, "host")) has_host = true;
    out.append(line).append("\r\n");
  }
  if (!has_host) out.append("Host: ").append(authority).append("\r\n");
  out.append("Connection: close\r\n\r\n");
  request.upstream_head = std::move(out);
  return request;
}

}  // namespace sandbox::egress
