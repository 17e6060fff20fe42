// `mcp-sandbox image build`: builds the Python image from Debian's packages with mmdebstrap
// (no Docker, no PyPI), writes it as an OCI image archive that `docker load` also accepts,
// caches the archive under state_dir/archives, and imports it into the image store.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rootfs/recipe/recipe.h"
#include "rootfs/store.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

struct BuildOptions {
  ImageVariant variant = ImageVariant::kDefault;
  std::string suite = std::string(kDefaultSuite);
  std::string name;         // "" = DefaultImageName(variant): "python" or "python-small"
  std::string mirror;       // "" = deb.debian.org (plus updates and security for stable suites)
  std::string state_dir;    // "" = ImageStore::DefaultStateDir()
  bool rebuild = false;     // build even when the cached archive is current
  std::string output_path;  // also copy the archive here ("" = no copy)
  // `--pip`: requirements pip installs into the image (Recipe::pip_requirements), from a
  // wheelhouse directory (tried first) and/or a PEP 503 index; one of them must be given.
  std::vector<std::string> pip;
  std::string pip_wheelhouse;
  std::string pip_index_url;
  // Stage changes (`detail` empty) and status lines within a stage (mmdebstrap's "I: ..."
  // messages). Called from the building thread and from mmdebstrap's reader thread, possibly
  // at the same time: it must be thread-safe.
  std::function<void(std::string_view stage, std::string_view detail)> progress;
};

// The recipe `options` build: the variant's, plus any --pip requirements (each a plain
// requirement, with a wheelhouse or an index to take them from). The command line's check.
Result<Recipe> RecipeFor(const BuildOptions& options);

struct BuildResult {
  std::string name;           // store name: "python"
  std::string reference;      // docker tag: "mcp-sandbox/python:latest"
  std::string archive_path;   // state_dir/archives/<name>-<variant>-<suite>.tar
  std::string recipe_hash;    // RecipeHash() of what was built
  std::string config_digest;  // "sha256:<hex>" of the image config: the store's key
  uint64_t archive_bytes = 0;
  uint64_t layer_bytes = 0;  // the uncompressed layer, about the unpacked size
  bool reused = false;       // the cached archive was current; nothing was built
  double seconds = 0;        // wall time of BuildImage
};

// A name `image build` may give: stricter than the store's rule (rootfs/image_name.h), as it
// is also one component of a docker reference (mcp-sandbox/<name>:latest) and a file name.
Status ValidateImageName(std::string_view name);

// The cached archive of `options` when it exists and was built from the current recipe.
Result<std::optional<BuildResult>> FindCachedBuild(const BuildOptions& options);

// Builds the archive (or reuses the cached one unless options.rebuild) and returns where it
// is. Two builds of the same name, variant and suite take turns (a lock file). Does not touch
// the store. Fails when mmdebstrap fails (with its last messages), or on I/O errors.
Result<BuildResult> BuildImage(const BuildOptions& options);

}  // namespace sandbox::rootfs
