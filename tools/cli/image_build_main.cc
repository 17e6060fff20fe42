// mcp-sandbox-image-build: `mcp-sandbox image build` alone, for tools/run. It links only the
// image libraries, so it compiles in about a minute and the image (mmdebstrap, minutes) builds
// while the server still compiles; the server's own `image build` then finds it current.
// Build tree only: the package ships `mcp-sandbox image build`.
#include <signal.h>

#include <string>
#include <vector>

#include "tools/cli/image_build_command.h"

namespace {

void OutliveTheSignal(int) {}

}  // namespace

int main(int argc, char** argv) {
  // tools/run stops a build by signalling its process group, as Ctrl-C does. mmdebstrap then
  // unmounts and removes its tree, but only while someone still reads its messages: dying at
  // once would leave its mounts behind. So the signal is caught (a caught signal, unlike an
  // ignored one, is not inherited by mmdebstrap) and the build fails the ordinary way when
  // mmdebstrap gives up, removing its own temporary files.
  struct sigaction action {};
  action.sa_handler = OutliveTheSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);

  std::vector<std::string> args(argv + 1, argv + argc);
  return sandbox::cli::ImageBuildCommand(args);
}
