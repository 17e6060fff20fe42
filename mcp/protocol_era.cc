#include "mcp/protocol_era.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"

namespace sandbox::mcp {

namespace {

struct CacheHint {
  std::string_view method;
  int64_t ttl_ms;
  const char* scope;
};

// How long a client (or a shared cache, for "public") may reuse a result (SEP-2549). The tool
// list and the server's description never change while the process lives: an hour. What is in
// a session changes with every run, and belongs to whoever holds the session id: not cached.
constexpr CacheHint kCacheHints[] = {
    {"server/discover", 3'600'000, "public"}, {"tools/list", 3'600'000, "public"},
    {"prompts/list", 3'600'000, "public"},    {"resources/templates/list", 3'600'000, "public"},
    {"resources/list", 0, "private"},         {"resources/read", 0, "private"},
};

constexpr std::string_view kRemovedMethods[] = {
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
};

}  // namespace

bool IsModernProtocolVersion(std::string_view version) {
  return std::find(std::begin(kModernProtocolVersions), std::end(kModernProtocolVersions),
                   version) != std::end(kModernProtocolVersions);
}

bool HasModernMeta(const Json& params) {
  if (!params.is_object()) return false;
  auto meta = params.find("_meta");
  return meta != params.end() && meta->is_object() && meta->contains(kMetaProtocolVersion);
}

tl::expected<ModernRequestMeta, std::string> ReadModernMeta(const Json& params) {
  const Json* meta = nullptr;
  if (params.is_object()) {
    if (auto it = params.find("_meta"); it != params.end()) meta = &*it;
  }
  if (meta == nullptr || !meta->is_object()) {
    return tl::make_unexpected(fmt::format(
        "Invalid params: params._meta with {} and {} is required (protocol revision 2026-07-28)",
        kMetaProtocolVersion, kMetaClientCapabilities));
  }
  ModernRequestMeta out;
  auto version = meta->find(kMetaProtocolVersion);
  if (version == meta->end() || !version->is_string()) {
    return tl::make_unexpected(
        fmt::format("Invalid params: _meta[\"{}\"] (a string) is required", kMetaProtocolVersion));
  }
  out.protocol_version = version->get<std::string>();
  auto capabilities = meta->find(kMetaClientCapabilities);
  if (capabilities == meta->end() || !capabilities->is_object()) {
    return tl::make_unexpected(fmt::format("Invalid params: _meta[\"{}\"] (an object) is required",
                                           kMetaClientCapabilities));
  }
  out.client_capabilities = *capabilities;
  if (auto info = meta->find(kMetaClientInfo); info != meta->end() && !info->is_object()) {
    return tl::make_unexpected(
        fmt::format("Invalid params: _meta[\"{}\"] must be an object", kMetaClientInfo));
  }
  if (auto level = meta->find(kMetaLogLevel); level != meta->end()) {
    auto parsed = level->is_string() ? ParseLogLevel(level->get<std::string>()) : std::nullopt;
    if (!parsed) {
      return tl::make_unexpected(fmt::format(
          "Invalid params: _meta[\"{}\"] must be one of debug, info, notice, warning, error, "
          "critical, alert, emergency",
          kMetaLogLevel));
    }
    out.log_level = parsed;
  }
  return out;
}

tl::expected<ModernRequestMeta, Json> ValidateModernRequest(const Json& id, const Json& params) {
  auto meta = ReadModernMeta(params);
  if (!meta) return tl::make_unexpected(MakeErrorResponse(id, kInvalidParams, meta.error()));
  if (!IsModernProtocolVersion(meta->protocol_version)) {
    Json supported = Json::array();
    for (auto version : kModernProtocolVersions) supported.push_back(version);
    return tl::make_unexpected(
        MakeErrorResponse(id, kUnsupportedProtocolVersion, "Unsupported protocol version",
                          {{"supported", std::move(supported)},
                           {"requested", ValidUtf8(Utf8Prefix(meta->protocol_version, 64))}}));
  }
  // The value itself, not the expected<…, std::string>: tl::expected's converting constructor
  // placement-constructs over a default-constructed value and leaks its allocations.
  return std::move(*meta);
}

bool IsRemovedInModernEra(std::string_view method) {
  return std::find(std::begin(kRemovedMethods), std::end(kRemovedMethods), method) !=
         std::end(kRemovedMethods);
}

void DecorateModernResult(std::string_view method, const Json& server_info, Json& result) {
  if (!result.is_object()) return;
  if (!result.contains("resultType")) result["resultType"] = "complete";
  Json& meta = result["_meta"];
  if (!meta.is_object()) meta = Json::object();
  meta[kMetaServerInfo] = server_info;
  for (const auto& hint : kCacheHints) {
    if (hint.method != method) continue;
    if (!result.contains("ttlMs")) result["ttlMs"] = hint.ttl_ms;
    if (!result.contains("cacheScope")) result["cacheScope"] = hint.scope;
  }
}

int ModernHttpStatus(const Json& response) {
  if (!response.is_object()) return 200;
  auto error = response.find("error");
  if (error == response.end() || !error->is_object()) return 200;
  auto code = error->find("code");
  if (code == error->end() || !code->is_number_integer()) return 200;
  switch (code->get<int>()) {
    case kMethodNotFound:
      return 404;
    case kHeaderMismatch:
    case kMissingRequiredClientCapability:
    case kUnsupportedProtocolVersion:
    case kInvalidRequest:
    case kParseError:
      return 400;
    default:
      return 200;
  }
}

Json MissingClientCapabilities(const Json& required, const Json& declared) {
  Json missing = Json::object();
  if (!required.is_object()) return missing;
  for (const auto& [name, value] : required.items()) {
    if (!declared.is_object() || !declared.contains(name)) missing[name] = value;
  }
  return missing;
}

}  // namespace sandbox::mcp
