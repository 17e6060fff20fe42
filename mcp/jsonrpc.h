// JSON-RPC 2.0 as MCP uses it: parsing and classifying client messages, building responses,
// errors and notifications, and serializing them as one line of valid UTF-8 JSON.
// Pure functions; nlohmann's exceptions never leave this file pair.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

// ValidUtf8 and the UTF-8 cuts: whoever builds a message repairs the text it puts in.
#include "runtime/base/utf8.h"

namespace sandbox::mcp {

using Json = nlohmann::json;

// Every JSON-RPC error code the server answers with, named in one place.
enum RpcError : int {
  // JSON-RPC 2.0's own (MCP schema.ts).
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  // The Streamable HTTP transport's, as the MCP SDKs answer them: a request the transport
  // refuses (bad headers, too many connections) and an Mcp-Session-Id it does not know.
  kTransportError = -32000,
  kTransportSessionNotFound = -32001,
  // The ones 2026-07-28 defines (-32020..-32099 is the spec's own range).
  kHeaderMismatch = -32020,
  kMissingRequiredClientCapability = -32021,
  kUnsupportedProtocolVersion = -32022,
};

// One client message, classified. Requests carry an id (string or integer, never null);
// notifications do not; responses answer a request we sent (we send none, so they are dropped).
struct Message {
  enum class Kind { kRequest, kNotification, kResponse };
  Kind kind = Kind::kRequest;
  Json id;             // kRequest / kResponse: the id exactly as received (same JSON type)
  std::string method;  // kRequest / kNotification
  Json params;         // an object, or null when absent
};

// Parses a client message as JSON, refusing nesting deeper than kMaxJsonDepth before anything
// recursive sees it (runtime/base/json_parse.h). The error says which (invalid or too deep); the
// caller answers -32700 with id null.
tl::expected<Json, std::string> ParseMessageJson(std::string_view text);
// The same, without the reason: nullopt when it is not JSON or is nested too deep.
std::optional<Json> ParseJson(std::string_view text);

// Classifies one JSON value as a message. When it is not a valid JSON-RPC message, returns the
// error response to send back (-32600, with the id if one could be read, else null).
tl::expected<Message, Json> ClassifyMessage(Json value);

// A key that tells request ids apart by value and type ("1" vs 1), for in-flight maps.
std::string IdKey(const Json& id);

Json MakeResponse(const Json& id, Json result);
Json MakeErrorResponse(const Json& id, int code, std::string_view message, Json data = nullptr);
Json MakeNotification(std::string_view method, Json params);

// Serializes a message as one line (no newline inside, none appended). Strings that are not
// valid UTF-8 are repaired with U+FFFD rather than throwing.
std::string Serialize(const Json& message);

}  // namespace sandbox::mcp
