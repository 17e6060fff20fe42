// Process-wide logging setup. Logs never go to stdout: it belongs to the stdio MCP transport
// and to `run`'s streamed output.
#pragma once

#include <string>

#include "runtime/base/result.h"

namespace sandbox {

struct LogOptions {
  std::string level = "info";      // trace|debug|info|warn|error|critical|off
  std::string file;                // empty: stderr
  std::string format = "console";  // console|json
  // SANDBOX_REPLICA_ID: every line names it ("[r2]" / "replica":"r2"), so the logs of several
  // replicas can be merged. A valid replica id holds no character a pattern or JSON would mind.
  std::string replica;
};

// Validates the options and installs the default spdlog logger. Safe to call again.
Status InitLogging(const LogOptions& options);

}  // namespace sandbox
