// The subcommands of mcp-sandbox. Each takes the arguments after its name and returns the
// process exit code (0 ok, 1 failure, 2 usage; `run` returns the snippet's own code).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mcp/resources.h"
#include "mcp/tool.h"
#include "tools/cli/image_build_command.h"

namespace sandbox::rootfs {
class ImageStore;
}

namespace sandbox::cli {

using Argv = std::vector<std::string>;

int ServeCommand(const Argv& args);
// `serve` with tools added after the sandbox ones (the conformance suite's fixtures, served by
// a test-only binary: tests/mcp/conformance_server_main.cc).
// `wrap_resources`, when set, serves other resources beside the session files (their fixtures).
using ResourceWrapper = std::function<std::shared_ptr<mcp::ResourceProvider>(
    std::shared_ptr<mcp::ResourceProvider> session_files)>;
int ServeCommand(const Argv& args, std::vector<mcp::Tool> extra_tools,
                 const ResourceWrapper& wrap_resources = {});
int RunCommand(const Argv& args);
int ImageCommand(const Argv& args);
int DoctorCommand(const Argv& args);
int SessionsCommand(const Argv& args);
int TopCommand(const Argv& args);  // cmd_top.cc: a live view of the sandboxes

}  // namespace sandbox::cli
