// The worker's byte code for `mcp-sandbox run` and `serve`, kept per image (issue #41). Python
// never caches a script it runs as __main__, so every sandbox's worker compiled worker.py afresh:
// about a third of a cold worker's CPU (10 ms of a 25 ms start here). A run instead points its
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
//
// `run` compiles for its image before its sandbox; `serve` compiles for its default image
// before its pool starts, then starts every sandbox of an image that has a kept copy on it
// (KeptAgentDir, the same key and checks), so its pool fills and refills without the compile.
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

// The kept copy for sandboxes of `image` when there is one this user made for this image and
// agent, else "": a lookup only (a few stats and one small read), nothing is compiled.
std::string KeptAgentDir(const SessionConfig& config, const ResolvedImage& image);

// For `serve`: the default image's copy made now when missing (CompiledAgentDir), and `config`'s
// agent_dir_for and agent_dir_failed set to start each sandbox on its image's kept copy when
// there is one (KeptAgentDir) and to forget a copy a sandbox did not start on.
void UseKeptWorkerByteCode(SessionConfig& config, const std::shared_ptr<Backend>& backend,
                           const ImageResolver& resolver);

// Removes a kept copy that a sandbox did not start on.
void ForgetCompiledAgentDir(const SessionConfig& config, const std::string& dir);

}  // namespace sandbox::cli
