// mcp-sandbox: the command line. Dispatches to the subcommands in tools/cli/cmd_*.cc.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "sandbox_commit.h"  // generated: SANDBOX_COMMIT
#include "tools/cli/args.h"
#include "tools/cli/commands.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(const sandbox::cli::Argv&);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"serve", sandbox::cli::ServeCommand, "run the MCP server (stdio by default, or --http)"},
    {"run", sandbox::cli::RunCommand, "run a snippet once in a fresh sandbox (for CI runners)"},
    {"image", sandbox::cli::ImageCommand, "build, import, list and remove sandbox images"},
    {"doctor", sandbox::cli::DoctorCommand, "show what this host supports and what serve will use"},
    {"sessions", sandbox::cli::SessionsCommand, "list sessions; sweep what a crashed server left"},
    {"top", sandbox::cli::TopCommand, "a live view of the sandboxes: CPU, memory, disk, egress"},
};

void PrintUsage(std::ostream& out) {
  out << "usage: mcp-sandbox <command> [flags]\n\ncommands:\n";
  for (const auto& sub : kSubcommands) {
    out << "  " << sub.name << std::string(10 - std::strlen(sub.name), ' ') << sub.summary << "\n";
  }
  out << "\nRun 'mcp-sandbox <command> --help' for a command's flags and an example.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(std::cerr);
    return sandbox::cli::kExitUsage;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(std::cout);
    return sandbox::cli::kExitOk;
  }
  if (name == "--version" || name == "version") {
    std::cout << "mcp-sandbox " << SANDBOX_VERSION << " (commit " << SANDBOX_COMMIT << ")\n";
    return sandbox::cli::kExitOk;
  }
  sandbox::cli::Argv rest(argv + 2, argv + argc);
  for (const auto& sub : kSubcommands) {
    if (name == sub.name) return sub.run(rest);
  }
  std::cerr << "mcp-sandbox: unknown command '" << name << "' (see mcp-sandbox --help)\n";
  return sandbox::cli::kExitUsage;
}
