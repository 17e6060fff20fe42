// Subcommands whose implementation has not landed yet say so plainly and fail; each moves to
// its own tools/cli/cmd_<name>.cc when it lands (and is removed from here).
#include <iostream>

#include "tools/cli/args.h"
#include "tools/cli/commands.h"

namespace sandbox::cli {
namespace {
int NotYet(const char* name) {
  std::cerr << "mcp-sandbox " << name << ": not available in this build yet\n";
  return kExitFailure;
}
}  // namespace

int ServeCommand(const Argv&) { return NotYet("serve"); }
int RunCommand(const Argv&) { return NotYet("run"); }
int SessionsCommand(const Argv&) { return NotYet("sessions"); }

}  // namespace sandbox::cli
