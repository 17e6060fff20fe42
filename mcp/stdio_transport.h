// The stdio transport: one JSON-RPC message per line on stdin and stdout (MCP
// basic/transports). stdout carries protocol messages only: the transport moves it to a
// private close-on-exec descriptor and points fd 1 at stderr, so nothing else in the process
// (nor any child) can write to it. Serving ends on stdin EOF, SIGTERM, SIGINT or SIGHUP.
#pragma once

#include <cstddef>
#include <functional>

#include "mcp/server.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

struct StdioOptions {
  int in_fd = 0;
  int out_fd = 1;
  // Lines longer than this are refused (-32600) without being buffered whole.
  size_t max_line_bytes = 96u << 20;
  // Take over fd 1 and install signal handlers (off in tests that pass pipes).
  bool own_process_stdio = true;
};

// Serves one client until it goes away. `on_shutdown` runs after the last message was read
// and in-flight requests were cancelled (the caller closes every session there); then the
// server's workers are drained. Returns once everything is torn down.
Status ServeStdio(Server& server, const StdioOptions& options,
                  const std::function<void()>& on_shutdown);

}  // namespace sandbox::mcp
