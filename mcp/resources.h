// What the dispatcher serves MCP resources from: a ResourceProvider (the sandbox's session
// files, mcp/tools/session_file_resources.cc; the conformance fixtures in tests), and the
// mapping of its errors to JSON-RPC errors. The provider speaks plain C++ and Result; the
// protocol shapes (cursors aside) stay in the dispatcher.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox::mcp {

using Json = nlohmann::json;

// MCP's code for resources/read of a resource that does not exist, in the 2025 revisions
// (server/resources.mdx); from 2026-07-28 on it is -32602 (SEP-2164).
inline constexpr int kResourceNotFound = -32002;

struct ResourcePage {
  Json resources = Json::array();  // Resource objects: uri, name, mimeType?, size?, ...
  std::string next_cursor;         // "" on the last page
};

// Values of completion/complete (at most kMaxCompletionValues, as the spec caps them).
inline constexpr size_t kMaxCompletionValues = 100;
struct CompletionValues {
  std::vector<std::string> values;
  size_t total = 0;
  bool has_more = false;
};

class ResourceProvider {
 public:
  virtual ~ResourceProvider() = default;

  // The entries of resources/templates/list.
  virtual Json Templates() = 0;
  // One page of resources/list, from `cursor` ("" for the first). kInvalidArgument for a
  // cursor this provider did not hand out.
  virtual Result<ResourcePage> List(const std::string& cursor) = 0;
  // The `contents` array of resources/read. kNotFound / kSessionNotFound when nothing is
  // there; kInvalidArgument / kInvalidPath when `uri` is not one of this provider's.
  virtual Result<Json> Read(const std::string& uri) = 0;
  // completion/complete for argument `argument` of template `uri_template`: the values that
  // start with `prefix`. `context` holds the arguments the client already chose (may be null).
  // kInvalidArgument for a template or argument it does not have.
  virtual Result<CompletionValues> Complete(const std::string& uri_template,
                                            const std::string& argument, const std::string& prefix,
                                            const Json& context) = 0;
  // A token that changes whenever the resource does ("" while it does not exist), for
  // resources/subscribe. Errors as for Read; a transient one (kSessionBusy: a run holds the
  // session) means "unknown now".
  virtual Result<std::string> Version(const std::string& uri) = 0;
};

// The JSON-RPC error response for a failed resources/read or resources/subscribe of `uri` in
// protocol revision `protocol_version`: not found -> -32002 (-32602 from 2026-07-28), a URI
// that is not ours -> -32602, anything else -> -32603; data names the uri (cut) and the code.
Json ResourceErrorResponse(const Json& id, std::string_view uri, const Error& error,
                           std::string_view protocol_version);

// An opaque list cursor for `position` (any string), and back; nullopt for what is not one.
std::string EncodeCursor(std::string_view position);
std::optional<std::string> DecodeCursor(std::string_view cursor);

}  // namespace sandbox::mcp
