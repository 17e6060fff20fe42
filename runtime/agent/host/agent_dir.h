// Where the host keeps the agent's files (sandbox-init and worker.py), the directory every
// backend mounts read-only at /.sandbox inside a sandbox.
#pragma once

#include <string>

#include "runtime/base/result.h"

namespace sandbox {

// $SANDBOX_AGENT_DIR if set; else `agent/` next to the running executable (the build tree and
// an install keep it there); else the build tree's agent dir. kNotFound when the chosen
// directory lacks sandbox-init or worker.py.
Result<std::string> FindAgentDir();

}  // namespace sandbox
