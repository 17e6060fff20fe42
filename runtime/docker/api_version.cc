#include "runtime/docker/api_version.h"

#include <algorithm>
#include <charconv>

namespace sandbox::docker {
namespace {

bool ParseNumber(std::string_view text, int* out) {
  if (text.empty() || text.size() > 6 || text[0] < '0' || text[0] > '9') return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string ApiVersion::ToString() const { return fmt::format("{}.{}", major, minor); }

Result<ApiVersion> ParseApiVersion(std::string_view text) {
  size_t dot = text.find('.');
  ApiVersion version;
  if (dot == std::string_view::npos || !ParseNumber(text.substr(0, dot), &version.major) ||
      !ParseNumber(text.substr(dot + 1), &version.minor)) {
    return Fail(ErrorCode::kSandboxUnavailable, "malformed Docker API version '{}'", text);
  }
  return version;
}

Result<ApiVersion> NegotiateApiVersion(ApiVersion server_max,
                                       std::optional<ApiVersion> server_min) {
  ApiVersion chosen = std::min(kNewestApiVersion, server_max);
  if (chosen < kOldestApiVersion) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "the Docker daemon speaks API {} at most; mcp-sandbox needs {} or newer "
                "(Docker 20.10+)",
                server_max.ToString(), kOldestApiVersion.ToString());
  }
  if (server_min && chosen < *server_min) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "the Docker daemon accepts API {} or newer only; mcp-sandbox speaks up to {}",
                server_min->ToString(), kNewestApiVersion.ToString());
  }
  return chosen;
}

}  // namespace sandbox::docker
