// `image build` as a command of its own: shared by `mcp-sandbox image build` and the small
// build-tree helper tools/run starts before the server is compiled (image_build_main.cc), so
// the two halves of a first run overlap. Needs only the image libraries, none of the backends.
#pragma once

#include <string>
#include <vector>

namespace sandbox::rootfs {
class ImageStore;
}

namespace sandbox::cli {

// Does nothing (and says so) when the store already has the image of the current recipe,
// unless --rebuild.
int ImageBuildCommand(const std::vector<std::string>& args, rootfs::ImageStore& store);

// The same, in the store --state-dir names (default: ImageStore::DefaultStateDir()).
int ImageBuildCommand(const std::vector<std::string>& args);

}  // namespace sandbox::cli
