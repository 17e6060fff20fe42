// How the view tools ask a session for what a view shows (a page of a table, a chart): a small
// piece of Python, run in the session's interpreter, computes a JSON object, and the server reads
// it back. One place for the run, the way back and the errors, so each view tool holds only its
// own Python and its own result.
//
// The way back: a small object comes on stdout, after a marker. One larger than a run's stdout
// may be (SANDBOX_MAX_OUTPUT_BYTES, 100 KB by default; a Plotly figure of 10,000 points is 250
// KB) is written to a file in the sandbox's /tmp and read from there, up to
// SANDBOX_MAX_RESULT_BYTES. The next view call a minute later or more removes it.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/tools/sandbox_tools.h"
#include "runtime/base/result.h"

namespace sandbox::mcp::apps {

using Json = nlohmann::json;

struct SessionJsonRequest {
  std::string session_id;
  // Python that defines __mcp_view_result(), a function of no arguments that returns a dict
  // (made of JSON types) or raises. RunForView calls it, then deletes every name it bound.
  std::string code;
  std::string_view what;            // what the object is, for errors: "page", "chart"
  std::string_view too_large_hint;  // how to make it fit, when it exceeds a result
};

// The object __mcp_view_result() returned. Errors: the session's own (session_not_found, busy,
// ...); kInvalidArgument with the exception's type and message when it raised (the arguments
// named something the session does not hold, or not the right kind of thing);
// kArtifactTooLarge when the object exceeds settings.max_result_bytes; kInternal when no object
// came back.
Result<Json> RunForView(SessionManager& sessions, const ToolSettings& settings,
                        SessionJsonRequest request);

}  // namespace sandbox::mcp::apps
