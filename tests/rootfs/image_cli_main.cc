// The `image` subcommand of mcp-sandbox on its own, so the CLI tests of the image store do not
// depend on every other room of the binary: `rootfs_image_cli image ls` == `mcp-sandbox image ls`.
#include <string>
#include <vector>

#include "tools/cli/args.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "image") return sandbox::cli::kExitUsage;
  return sandbox::cli::ImageCommand(std::vector<std::string>(argv + 2, argv + argc));
}
