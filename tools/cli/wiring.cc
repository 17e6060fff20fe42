#include "tools/cli/wiring.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "rootfs/docker_archive.h"
#include "rootfs/recipe/image_builder.h"

namespace sandbox::cli {

std::string DefaultAgentDir() {
  if (const char* dir = std::getenv("SANDBOX_AGENT_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "agent";
  // The build tree keeps it beside the binary; the package installs it in /usr/lib/mcp-sandbox
  // (bin/../lib/mcp-sandbox, so any prefix works).
  auto beside = exe.parent_path() / "agent";
  auto installed = exe.parent_path().parent_path() / "lib" / "mcp-sandbox";
  if (!std::filesystem::exists(beside / "sandbox-init", ec) &&
      std::filesystem::exists(installed / "sandbox-init", ec)) {
    return installed.string();
  }
  return beside.string();
}

ImageResolver MakeImageResolver(std::shared_ptr<rootfs::ImageStore> store) {
  return [store = std::move(store)](const std::string& name) -> Result<ResolvedImage> {
    auto image = store->Find(name);
    if (!image) {
      Error error = std::move(image.error());
      error.code = ErrorCode::kSandboxUnavailable;
      error.message = fmt::format(
          "image '{}' is not in the store at {} ({}); build it with 'mcp-sandbox image build' "
          "or import one with 'mcp-sandbox image import FILE --name {}'",
          name, store->state_dir(), error.message, name);
      return Fail(std::move(error));
    }
    ResolvedImage resolved;
    resolved.name = name;
    resolved.rootfs = image->rootfs;
    resolved.env = image->config.env;
    resolved.workdir = image->config.working_dir;
    resolved.docker.reference = image->digest;
    // Asked for only when the Docker backend finds the daemon without the image (never by the
    // namespace backend), so resolving an image hashes no recipe: images built by `image build`
    // keep their archive in the store's cache; any other is exported from the store's tree.
    resolved.docker.source = [name, state_dir = store->state_dir(),
                              stored = *image]() -> Result<DockerImageSource> {
      rootfs::BuildOptions build;
      build.name = name;
      build.variant = name == rootfs::DefaultImageName(rootfs::ImageVariant::kSmall)
                          ? rootfs::ImageVariant::kSmall
                          : rootfs::ImageVariant::kDefault;
      build.state_dir = state_dir;
      if (auto cached = rootfs::FindCachedBuild(build);
          cached && *cached && (*cached)->config_digest == stored.digest) {
        return DockerImageSource{(*cached)->archive_path, stored.digest};
      }
      SBX_ASSIGN_OR_RETURN(rootfs::DockerArchive archive,
                           rootfs::EnsureDockerArchive(state_dir, stored));
      return DockerImageSource{archive.path, archive.image_id};
    };
    return resolved;
  };
}

}  // namespace sandbox::cli
