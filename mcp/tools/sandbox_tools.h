// The sandbox_* tools of DESIGN.md and what goes with them: session files as resources (the
// sandbox:// URIs results hand out), the file reader behind HTTP downloads, and the server's
// instructions. Every handler speaks to the runtime through SessionManager only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mcp/http_options.h"
#include "mcp/resources.h"
#include "mcp/server.h"
#include "mcp/tool.h"
#include "runtime/session/session_manager.h"

namespace sandbox::mcp {

struct ToolSettings {
  double exec_timeout_s = 60;  // default and maximum timeout_s
  uint64_t max_upload_bytes = 50ull << 20;
  uint64_t max_code_bytes = 100ull << 10;
  uint64_t max_output_bytes = 100ull << 10;
  uint64_t max_result_bytes = 1ull << 20;
};

std::vector<Tool> SandboxTools(SessionManager& sessions, const ToolSettings& settings);

// Session files as resources, sandbox://sessions/{session_id}/files/{+path}: list, read,
// subscribe, complete (session_file_resources.cc).
std::shared_ptr<ResourceProvider> SandboxResources(SessionManager& sessions,
                                                   const ToolSettings& settings);

// GET /files/{session_id}/{path} (largest file served: 256 MiB).
FileReader SandboxFileReader(SessionManager& sessions);

// The `instructions` of the initialize result: how to use the tools together, and what the
// sandboxes may reach under `egress` (the session manager's policy: SessionManager::config()).
std::string SandboxInstructions(const ToolSettings& settings, const egress::EgressConfig& egress);

}  // namespace sandbox::mcp
