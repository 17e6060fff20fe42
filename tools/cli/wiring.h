// Joins the rooms for the commands that run sandboxes (serve, run, sessions): the image store
// as an ImageResolver, where the agent lives, and the SessionConfig defaults.
#pragma once

#include <memory>
#include <string>

#include "rootfs/store.h"
#include "runtime/session/session_manager.h"

namespace sandbox::cli {

// The host dir holding sandbox-init and worker.py: $SANDBOX_AGENT_DIR, else "agent/" beside
// this executable (the build tree), else ../lib/mcp-sandbox from it (the installed package).
std::string DefaultAgentDir();

// Resolves image names through the store; the error says how to build or import the image.
ImageResolver MakeImageResolver(std::shared_ptr<rootfs::ImageStore> store);

}  // namespace sandbox::cli
