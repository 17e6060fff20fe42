#include "mcp/http_request_era.h"

#include "mcp/protocol_era.h"
#include "mcp/server.h"

namespace sandbox::mcp {

bool IsInitializeRequest(const Json& message) {
  return message.is_object() && message.contains("id") && message.contains("method") &&
         message["method"] == "initialize";
}

HttpPostEra DecidePostEra(std::string_view version_header, std::string_view session_id,
                          const Json& message) {
  bool modern_header = IsModernProtocolVersion(version_header);
  bool legacy_header = version_header.empty() || IsSupportedProtocolVersion(version_header);
  bool modern_body =
      message.is_object() && message.contains("params") && HasModernMeta(message["params"]);
  bool initialize = IsInitializeRequest(message);
  if (modern_header ||
      (session_id.empty() && !(initialize && legacy_header) && (modern_body || !legacy_header))) {
    return HttpPostEra::kModern;
  }
  if (!session_id.empty()) return HttpPostEra::kInSession;
  return initialize ? HttpPostEra::kOpenSession : HttpPostEra::kSessionless;
}

std::string LegacyHeaderVersion(std::string_view version_header) {
  return std::string(version_header.empty() ? kDefaultHeaderVersion : version_header);
}

}  // namespace sandbox::mcp
