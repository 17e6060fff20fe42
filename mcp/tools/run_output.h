// Turns a RunResult into a tool result: one text block first (errors, exit code, notes,
// stdout, stderr, artifacts), then figures and image artifacts as `image` content, then small
// text artifacts embedded and links to the rest; structuredContent with the same facts and no
// blobs.
#pragma once

#include <string>
#include <vector>

#include "mcp/tools/tool_support.h"
#include "runtime/agent/host/agent_client.h"

namespace sandbox::mcp::tools {

struct RunPresentation {
  std::string session_id;
  bool session_created = false;
  double timeout_s = 0;
  std::vector<std::string> notes;
  // run_once: the session closes right after, so artifacts are embedded (within the result
  // budget) rather than linked, and get no download URLs.
  bool embed_artifacts = false;
};

Json RunToolResult(ToolContext& context, ToolCall& call, const RunResult& run,
                   const RunPresentation& presentation);

// The error code a run's outcome maps to (timeout, oom, cancelled), if any.
std::optional<ErrorCode> RunErrorCode(const RunResult& run);

// The output schema shared by the run tools.
Json RunOutputSchema();

}  // namespace sandbox::mcp::tools
