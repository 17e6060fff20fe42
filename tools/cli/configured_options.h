// What `serve` and `run` build from the parsed configuration (tools/cli/config.h): the session
// manager's, the backend's, the tools', the MCP server's and the transports' options, in one
// mapping, so the two commands cannot read a setting two ways. What needs the running
// SessionManager (the file reader behind downloads, readiness, resources, instructions) is
// joined by `serve` itself.
#pragma once

#include "mcp/http_options.h"
#include "mcp/server.h"
#include "mcp/stdio_transport.h"
#include "mcp/tools/sandbox_tools.h"
#include "runtime/base/result.h"
#include "runtime/session/backend_factory.h"
#include "runtime/session/session_manager.h"
#include "tools/cli/config.h"

namespace sandbox::cli {

struct ConfiguredOptions {
  SessionConfig session;
  BackendOptions backend;
  mcp::ToolSettings tools;
  mcp::ServerOptions server;  // version, instructions and resources: the caller's
  mcp::StdioOptions stdio;
  mcp::HttpOptions http;  // read_file and readiness: the caller's
};

// Maps `config` (already validated by LoadServeConfig) to the options above. The state dir is
// the configured one, else the image store's default; the agent dir is DefaultAgentDir().
// Fails only when the egress policy cannot be made (EgressConfigFor).
Result<ConfiguredOptions> ConfiguredOptionsFor(const ServeConfig& config);

// `run`'s narrowing of the same options: one session and nothing kept for later (no warm
// pool, no hibernation), and the whole output (a CI log wants it; the stream is live). The
// backend keeps the configured budget, shared as if the server ran.
void NarrowToOneRun(ConfiguredOptions& options);

}  // namespace sandbox::cli
