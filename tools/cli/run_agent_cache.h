// The worker's byte code for `mcp-sandbox run`, kept per image (issue #41). Python never caches
// a script it runs as __main__, so every sandbox's worker compiled worker.py afresh: about a
// third of a cold worker's CPU (10 ms of a 25 ms start here). A run instead points its
// sandboxes at a copy of the agent dir that also holds worker.pyc, which sandbox-init runs when
// present (runtime/agent/init/main.cc).
//
// The byte code must come from the image's own Python (the host's is another version), and
// nothing a sandbox of user code writes may reach another sandbox: it is compiled once, in a
// fresh sandbox of the image that runs nothing but the compile, and kept in
// STATE_DIR/probe-cache/agent.UID/KEY (the runner's own, not writable by others, checked on
// reading). KEY names the image (its rootfs and Docker reference) and the agent's files (device,
// inode, size, mtime), so a new build or another image gets its own. A sandbox that does not
// start on a kept dir makes the caller forget it and start on the plain agent dir.
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/session/session_config.h"

namespace sandbox::cli {

// The agent dir for sandboxes of config.image: the kept copy with worker.pyc, made now when
// missing; config.agent_dir itself when it cannot be made (the reason is logged at debug).
std::string CompiledAgentDir(const SessionConfig& config, const std::shared_ptr<Backend>& backend,
                             const ImageResolver& resolver);

// Removes a kept copy that a sandbox did not start on.
void ForgetCompiledAgentDir(const SessionConfig& config, const std::string& dir);

}  // namespace sandbox::cli
