// The two eras of MCP one server speaks (2026-07-28 basic/versioning.mdx). Legacy (2025-03-26 to
// 2025-11-25): an `initialize` handshake fixes the revision for a stdio process or an HTTP
// Mcp-Session-Id. Modern (2026-07-28): no handshake; every request carries its revision and
// the client's capabilities in params._meta, and is served on its own. This file holds what the
// modern era adds, free of any transport: reading and validating a request's _meta, the
// revision's error codes, server/discover, and what every modern result carries (resultType,
// serverInfo, cache hints).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "mcp/jsonrpc.h"  // RpcError: the codes 2026-07-28 defines
#include "mcp/tool.h"

namespace sandbox::mcp {

using Json = nlohmann::json;

// The modern revisions this server speaks (server/discover's supportedVersions). The legacy
// ones are negotiated by initialize (kProtocolVersions in mcp/server.h).
inline constexpr std::string_view kModernProtocolVersions[] = {"2026-07-28"};
bool IsModernProtocolVersion(std::string_view version);

// The reserved _meta keys of a modern request and result (basic/index.mdx, _meta).
inline constexpr char kMetaProtocolVersion[] = "io.modelcontextprotocol/protocolVersion";
inline constexpr char kMetaClientCapabilities[] = "io.modelcontextprotocol/clientCapabilities";
inline constexpr char kMetaClientInfo[] = "io.modelcontextprotocol/clientInfo";
inline constexpr char kMetaLogLevel[] = "io.modelcontextprotocol/logLevel";
inline constexpr char kMetaServerInfo[] = "io.modelcontextprotocol/serverInfo";

// What a modern request says about itself in params._meta.
struct ModernRequestMeta {
  std::string protocol_version;
  Json client_capabilities = Json::object();
  // Without it the server sends no notifications/message for the request.
  std::optional<LogLevel> log_level;
};

// True when `params` carries a per-request protocol version: the request is modern, whatever
// the connection negotiated before.
bool HasModernMeta(const Json& params);

// Checks that the required fields are there and well-typed. The error is one sentence for an
// Invalid params (-32602) answer (HTTP 400).
tl::expected<ModernRequestMeta, std::string> ReadModernMeta(const Json& params);

// The full check of a modern request's _meta: shape (-32602), then the revision
// (UnsupportedProtocolVersion, -32022, with data{supported, requested}). Returns the error
// response for `id` on failure.
tl::expected<ModernRequestMeta, Json> ValidateModernRequest(const Json& id, const Json& params);

// Legacy-only methods the revision removed; a modern request for one is "Method not found".
bool IsRemovedInModernEra(std::string_view method);

// What every modern result carries: resultType "complete", _meta serverInfo, and for the
// cacheable methods (tools/list, prompts/list, resources/list, resources/templates/list,
// resources/read, server/discover) ttlMs and cacheScope unless the handler set them.
void DecorateModernResult(std::string_view method, const Json& server_info, Json& result);

// The HTTP status of a modern error response (streamable-http.mdx): 404 for an unknown method,
// 400 for the revision's own errors and malformed requests, else 200 (the error is in the body).
int ModernHttpStatus(const Json& response);

// The client capabilities `required` names that `declared` lacks, as a ClientCapabilities
// object ({"sampling": {}}); empty when all are there.
Json MissingClientCapabilities(const Json& required, const Json& declared);

}  // namespace sandbox::mcp
