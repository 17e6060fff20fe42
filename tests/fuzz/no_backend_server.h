// The MCP server as `serve` builds it (the real sandbox_* tools, resources, the dispatcher),
// over a SessionManager whose backend can start no sandbox: every path a client message takes
// through the dispatcher and the tools' argument checks runs, and a call that would need a
// sandbox ends in sandbox_unavailable instead of running code. For the fuzz targets that feed
// client bytes to the server.
#pragma once

#include <memory>
#include <string>

#include "mcp/server.h"
#include "mcp/tools/sandbox_tools.h"
#include "runtime/session/session_manager.h"

namespace sandbox::fuzz {

struct NoBackendServer {
  NoBackendServer();
  ~NoBackendServer();

  std::string state_dir;  // a temporary SANDBOX_STATE_DIR, removed by the destructor
  mcp::ToolSettings settings;
  std::unique_ptr<SessionManager> sessions;
  std::unique_ptr<mcp::Server> server;
};

// One per process: fuzz targets build it on their first input and keep it.
NoBackendServer& SharedNoBackendServer();

}  // namespace sandbox::fuzz
