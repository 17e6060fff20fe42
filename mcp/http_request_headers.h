// The request headers of Streamable HTTP in revision 2026-07-28 (basic/transports/
// streamable-http.mdx, "Request Metadata"): MCP-Protocol-Version, Mcp-Method and Mcp-Name mirror
// the body, and Mcp-Param-{Name} mirrors a tool argument whose schema says `x-mcp-header`, so a
// load balancer can route without reading the body. The server reads the body, so it checks
// that both say the same: a front end routing on a header the body contradicts would send a
// call to the wrong host. Socket-free, so every rule is testable without a server.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/http_admission.h"

namespace sandbox::mcp {

// Decodes a header value that may use the Base64 sentinel (`=?base64?...?=`, standard
// alphabet, padded). OWS around the value is dropped first. nullopt when the value holds
// characters a header may not, or the sentinel wraps invalid Base64.
std::optional<std::string> DecodeMcpHeaderValue(std::string_view value);

// The name (as sent) of a routing header that appears more than once in `head`, or whose value
// is a comma-separated list (two fields folded into one, as a proxy may), or nullopt. Routing
// headers: MCP-Protocol-Version, Mcp-Method, Mcp-Name, every Mcp-Param-{Name}, and
// Mcp-Session-Id; none of their values holds a comma (ids, versions, methods), but Mcp-Name's
// (a resource URI may), which is refused only when repeated. The server reads the first of a
// repeated field and HAProxy's req.hdr() the last value, so two of them could have the router
// send a call to one host while the server checks and runs another's: any repetition is refused
// (400), equal values too, since nothing needs it. The router template refuses the same.
std::optional<std::string> RepeatedRoutingHeader(const HttpRequestHead& head);

// Checks the headers of a modern POST against its body `message` (a JSON-RPC request). For
// tools/call, `input_schema` is the called tool's (null when unknown: no Mcp-Param checks).
// nullopt when they agree; else one sentence for a HeaderMismatch (-32020, HTTP 400) answer.
std::optional<std::string> CheckRequestHeaders(const HttpRequestHead& head,
                                               const nlohmann::json& message,
                                               const nlohmann::json& input_schema);

}  // namespace sandbox::mcp
