#include "mcp/public_url.h"

#include "runtime/base/ascii.h"

namespace sandbox::mcp {

namespace {

bool HasControlOrSpace(std::string_view value) {
  for (unsigned char c : value) {
    if (c <= 0x20 || c == 0x7F) return true;
  }
  return false;
}

}  // namespace

Result<std::string> ParsePublicUrl(std::string_view value) {
  if (value.empty()) return std::string();
  auto invalid = [](std::string_view why) {
    return Fail(ErrorCode::kInvalidArgument, "{} (example: https://sandbox.example.com/mcp-1)",
                why);
  };
  if (HasControlOrSpace(value)) return invalid("must not contain spaces or control characters");
  auto scheme_end = value.find("://");
  if (scheme_end == std::string_view::npos) return invalid("must start with http:// or https://");
  std::string scheme = AsciiLower(value.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") return invalid("the scheme must be http or https");
  std::string_view rest = value.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return invalid("must have no query or fragment");
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.empty()) return invalid("must name a host");
  if (authority.find('@') != std::string_view::npos) return invalid("must have no user info");
  std::string url = scheme + "://" + AsciiLower(authority) + std::string(path);
  while (url.back() == '/') url.pop_back();
  return url;
}

std::string PublicUrlHost(std::string_view public_url) {
  auto scheme_end = public_url.find("://");
  if (scheme_end == std::string_view::npos) return "";
  std::string_view rest = public_url.substr(scheme_end + 3);
  return std::string(rest.substr(0, rest.find('/')));
}

std::string DownloadBaseUrl(std::string_view public_url, std::string_view host_header,
                            std::string_view listening) {
  if (!public_url.empty()) return std::string(public_url);
  return "http://" + std::string(host_header.empty() ? listening : host_header);
}

}  // namespace sandbox::mcp
