// The recipe of the mcp-sandbox Python images, as data: which Debian suite and packages, how
// mmdebstrap is called, and the image config (user, env, working dir). Pure: nothing here runs
// a process or touches a file, so every part is unit-tested.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::rootfs {

// default: python3 with the scientific stack; small: python3 only (fast to build, for tests).
enum class ImageVariant { kDefault, kSmall };

// "default" / "small" -> ImageVariant; anything else fails with kInvalidArgument.
Result<ImageVariant> ParseImageVariant(std::string_view name);
std::string_view ImageVariantName(ImageVariant variant);
// The store name of each variant's image: "python" and "python-small".
std::string DefaultImageName(ImageVariant variant);

struct Recipe {
  ImageVariant variant = ImageVariant::kDefault;
  std::string suite;                      // Debian suite: "trixie", "bookworm", ...
  std::vector<std::string> packages;      // mmdebstrap --include, on top of the essential set
  std::vector<std::string> dpkg_options;  // path-exclude/path-include rules against docs
  std::string customize_script;           // the --customize-hook (rootfs/recipe/customize.sh)
  // `image build --pip`: what pip installs into /usr/local after Debian's packages (which then
  // include python3-pip). Part of the hash; where pip takes them from is not (as the mirror).
  std::vector<std::string> pip_requirements;
  // The image config.
  std::string user;              // "1000:1000"
  std::string working_dir;       // "/mnt/data"
  std::vector<std::string> env;  // KEY=VALUE
  std::vector<std::string> cmd;  // ["python3"]
};

inline constexpr std::string_view kDefaultSuite = "trixie";

// The recipe of `variant` on `suite`. The suite must look like a Debian suite or codename
// (lowercase letters, digits, '-'); anything else fails with kInvalidArgument.
Result<Recipe> MakeRecipe(ImageVariant variant, std::string_view suite);

// Adds `image build --pip` requirements: each must be a plain requirement (IsPlainRequirement:
// a name with extras and version specifiers; pin with == for a reproducible rebuild).
Status AddPipRequirements(Recipe& recipe, const std::vector<std::string>& requirements);

// A stable hex SHA-256 over everything that decides the image's content: suite, packages, dpkg
// options, the customize script and the config. The mirror is not part of it (any mirror
// serves the same packages). Stored beside the cached archive, so `image build` knows when
// the archive and the stored image are still current.
std::string RecipeHash(const Recipe& recipe);

// How mmdebstrap runs.
struct MmdebstrapOptions {
  bool as_root = true;       // --mode=root; otherwise --mode=unshare (unprivileged userns)
  std::string mirror;        // "" = mmdebstrap's default (deb.debian.org, plus updates and
                             // security for a stable codename)
  std::string hook_path;     // the customize script, written to a file by the caller
  std::string output = "-";  // "-": the tarball on stdout
  // Where pip takes the recipe's pip_requirements from: a wheelhouse directory on the host
  // (tried first) and/or a PEP 503 index URL. At least one when there are requirements.
  std::string pip_wheelhouse;
  std::string pip_index_url;
};

// The full argv ("mmdebstrap", ...) that builds `recipe` as a tarball.
std::vector<std::string> MmdebstrapArgv(const Recipe& recipe, const MmdebstrapOptions& options);

}  // namespace sandbox::rootfs
