#include "runtime/egress/egress_config.h"

#include <charconv>

namespace sandbox::egress {

Result<UrlHost> HostOfUrl(std::string_view url) {
  auto bad = [&url](std::string_view why) {
    return Fail(ErrorCode::kInvalidArgument, "index URL '{}': {}", url, why);
  };
  UrlHost out;
  std::string_view rest;
  if (url.starts_with("https://")) {
    out.port = 443;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    out.port = 80;
    rest = url.substr(7);
  } else {
    return bad("not an http:// or https:// URL");
  }
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    authority.remove_prefix(authority.rfind('@') + 1);
  std::string_view port_text;
  if (authority.starts_with("[")) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    out.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("junk after ']'");
      port_text = authority.substr(close + 2);
    }
  } else {
    size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return bad("no host");
  if (!port_text.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      return bad("the port is not 1..65535");
    }
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

Status ApplyIndexUrl(EgressConfig& config) {
  if (!config.enabled()) return {};
  if (config.index_url.empty()) {
    if (config.allow.AllowsName("pypi.org", 443)) config.index_url = "https://pypi.org/simple";
    return {};
  }
  for (char c : config.index_url) {
    // It is quoted into pip's command line and the sandbox's environment.
    if (c <= ' ' || c == '\'' || c == '"' || c == '\\' || c == 0x7f) {
      return Fail(ErrorCode::kInvalidArgument,
                  "index URL '{}': blanks, quotes and backslashes "
                  "must be percent-encoded",
                  config.index_url);
    }
  }
  SBX_ASSIGN_OR_RETURN(UrlHost host, HostOfUrl(config.index_url));
  if (auto address = ParseIpLiteral(host.host)) {
    config.allow.AllowAddress(*address, host.port);
    return {};
  }
  auto name = NormalizeHostName(host.host);
  if (!name) {
    return Fail(ErrorCode::kInvalidArgument, "index URL '{}': '{}' is not a host name",
                config.index_url, host.host);
  }
  config.allow.AllowName(*name, host.port);
  return {};
}

}  // namespace sandbox::egress
