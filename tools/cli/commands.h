// The subcommands of mcp-sandbox. Each takes the arguments after its name and returns the
// process exit code (0 ok, 1 failure, 2 usage; `run` returns the snippet's own code).
#pragma once

#include <string>
#include <vector>

namespace sandbox::cli {

using Argv = std::vector<std::string>;

int ServeCommand(const Argv& args);
int RunCommand(const Argv& args);
int ImageCommand(const Argv& args);
int DoctorCommand(const Argv& args);
int SessionsCommand(const Argv& args);

}  // namespace sandbox::cli
