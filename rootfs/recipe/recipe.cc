#include "rootfs/recipe/recipe.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "rootfs/digest.h"
#include "rootfs/recipe/customize_script.h"
#include "rootfs/recipe/image_batteries.h"
#include "runtime/base/pip_requirement.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::rootfs {
namespace {

// Bump when the way a recipe turns into an image changes outside the recipe's own fields
// (for example the layer writer), so cached archives are rebuilt.
constexpr int kRecipeFormat = 1;

// The default image: what a model reaches for in a data session (issue #16), and every package
// of E2B's code-interpreter template that Debian ships (docs/images.md has the side-by-side table).
// All from Debian (no PyPI at build time). mmdebstrap installs no Recommends unless told to, so
// each of these brings its Depends only. The libraries are the batteries (image_batteries.cc);
// around them: python3, matplotlib's default font (DejaVu Sans, so plots render text), and dill
// for hibernate and resume (runtime/agent/session_state.py: it serializes what pickle cannot,
// functions, classes and lambdas defined in the session).
std::vector<std::string> DefaultPackages() {
  std::vector<std::string> packages = {"python3"};
  for (const auto& battery : DefaultImageBatteries()) packages.emplace_back(battery.package);
  packages.insert(packages.end(), {"fonts-dejavu-core", "python3-dill"});
  return packages;
}

// The customize hook learns the modules its smoke test imports from the recipe: a line after
// the script's first (its #!) sets SANDBOX_IMAGE_MODULES (customize.sh; empty for the small
// image). Module names are identifiers, so the single quotes need no escaping.
std::string CustomizeScript(ImageVariant variant) {
  std::string modules;
  if (variant == ImageVariant::kDefault) {
    for (const auto& battery : DefaultImageBatteries()) {
      if (!modules.empty()) modules += ' ';
      modules += battery.module;
    }
  }
  std::string script(kCustomizeScript);
  size_t first_line_end = script.find('\n') + 1;  // customize.sh starts with "#!/bin/sh\n"
  script.insert(first_line_end, "SANDBOX_IMAGE_MODULES='" + modules + "'\n");
  return script;
}

// dpkg drops these paths while unpacking every package (see dpkg(1) --path-exclude), so docs,
// man pages and translations never reach the tree. Copyright files stay (licence terms).
// The test suites inside Python packages cannot go this way: py3compile, run by the packages'
// postinst, byte-compiles every .py the package lists and fails on missing ones; customize.sh
// removes them after the install instead.
//
// force-unsafe-io: dpkg flushes every file it unpacks to disk before renaming it into place, so
// that a crash mid-install leaves a working system. The tree here is scratch, turned into a
// tarball and removed; a crashed build is started again from nothing. Tens of thousands of
// flushes (numpy, pandas, matplotlib) were the disk-bound part of a first `tools/run`.
const std::vector<std::string> kDpkgOptions = {
    "force-unsafe-io",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/locale/locale.alias",
    "path-exclude=/usr/share/lintian/*",
};

// The environment of every session. HOME is /tmp, not /home/sandbox: the rootfs is mounted
// read-only and only /tmp and /mnt/data are writable, and /mnt/data is the user's artifact
// directory, which dotfiles (.cache, .local, .config) would clutter. pip --user therefore
// installs into /tmp/.local, whose bin/ ends PATH.
const std::vector<std::string> kEnv = {
    "PATH=/usr/local/bin:/usr/bin:/bin:/tmp/.local/bin",
    "HOME=/tmp",
    "LANG=C.UTF-8",
    "MPLBACKEND=Agg",
    "MPLCONFIGDIR=/tmp/matplotlib",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
};

bool IsSuiteName(std::string_view suite) {
  if (suite.empty() || suite.size() > 64 || suite.front() == '-') return false;
  return std::all_of(suite.begin(), suite.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string JoinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
}

// 'text' for sh, with every ' written as '\''.
std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The hook that pip-installs the recipe's requirements into the tree (in a chroot, with the
// tree's own Python, as root: into /usr/local) and records what it installed, exact versions,
// in /usr/share/mcp-sandbox/pip-freeze.txt. A wheelhouse is copied in for the install and
// removed after. An http:// index is trusted as given: the operator named it.
std::string PipHook(const Recipe& recipe, const MmdebstrapOptions& options) {
  std::string hook = "set -e; ";
  std::string sources;
  if (!options.pip_wheelhouse.empty()) {
    hook += "mkdir -p \"$1/tmp/wheelhouse\"; cp -a " + ShellQuote(options.pip_wheelhouse + "/.") +
            " \"$1/tmp/wheelhouse/\"; ";
    sources += " --find-links /tmp/wheelhouse";
  }
  if (options.pip_index_url.empty()) {
    sources += " --no-index";
  } else {
    sources += " --index-url " + ShellQuote(options.pip_index_url);
    if (options.pip_index_url.rfind("http://", 0) == 0) {
      std::string host = options.pip_index_url.substr(7);
      host = host.substr(0, host.find_first_of("/:"));
      sources += " --trusted-host " + ShellQuote(host);
    }
  }
  std::string requirements;
  for (const auto& requirement : recipe.pip_requirements)
    requirements += " " + ShellQuote(requirement);
  // PIP_CONFIG_FILE=/dev/null: the build host's pip configuration stays out of the image.
  hook +=
      "chroot \"$1\" env HOME=/root PIP_CONFIG_FILE=/dev/null python3 -m pip install "
      "--no-cache-dir --disable-pip-version-check --root-user-action=ignore "
      "--break-system-packages --no-warn-script-location" +
      sources + requirements + "; ";
  hook += "mkdir -p \"$1/usr/share/mcp-sandbox\"; ";
  hook +=
      "for site in \"$1\"/usr/local/lib/python3*/dist-packages; do "
      "chroot \"$1\" env PIP_CONFIG_FILE=/dev/null python3 -m pip list --format=freeze "
      "--disable-pip-version-check --path \"${site#$1}\"; done "
      "> \"$1/usr/share/mcp-sandbox/pip-freeze.txt\"; ";
  hook += "rm -rf \"$1/tmp/wheelhouse\"";
  return hook;
}

}  // namespace

Result<ImageVariant> ParseImageVariant(std::string_view name) {
  if (name == "default") return ImageVariant::kDefault;
  if (name == "small") return ImageVariant::kSmall;
  return Fail(ErrorCode::kInvalidArgument, "unknown image variant '{}' (default or small)", name);
}

std::string_view ImageVariantName(ImageVariant variant) {
  return variant == ImageVariant::kSmall ? "small" : "default";
}

std::string DefaultImageName(ImageVariant variant) {
  return variant == ImageVariant::kSmall ? "python-small" : "python";
}

Result<Recipe> MakeRecipe(ImageVariant variant, std::string_view suite) {
  if (!IsSuiteName(suite)) {
    return Fail(ErrorCode::kInvalidArgument,
                "'{}' is not a Debian suite name (lowercase letters, digits and '-')", suite);
  }
  Recipe recipe;
  recipe.variant = variant;
  recipe.suite = std::string(suite);
  recipe.packages =
      // dill (pure Python, 0.5 MB) so that hibernation keeps functions and classes here too.
      variant == ImageVariant::kSmall ? std::vector<std::string>{"python3", "python3-dill"}
                                      : DefaultPackages();
  recipe.dpkg_options = kDpkgOptions;
  recipe.customize_script = CustomizeScript(variant);
  recipe.user = "1000:1000";
  recipe.working_dir = layout::kDataDir;
  recipe.env = kEnv;
  recipe.cmd = {"python3"};
  return recipe;
}

Status AddPipRequirements(Recipe& recipe, const std::vector<std::string>& requirements) {
  for (const std::string& requirement : requirements) {
    if (!IsPlainRequirement(requirement)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "'{}' is not a plain requirement (a name, extras and version specifiers such "
                  "as scikit-learn==1.6.1; no options, paths or URLs)",
                  requirement);
    }
    recipe.pip_requirements.push_back(requirement);
  }
  if (!recipe.pip_requirements.empty() && std::find(recipe.packages.begin(), recipe.packages.end(),
                                                    "python3-pip") == recipe.packages.end()) {
    recipe.packages.push_back("python3-pip");
  }
  return {};
}

std::string RecipeHash(const Recipe& recipe) {
  // nlohmann's dump() of an object sorts keys, which makes this canonical.
  nlohmann::json doc = {
      {"format", kRecipeFormat},
      {"variant", ImageVariantName(recipe.variant)},
      {"suite", recipe.suite},
      {"packages", recipe.packages},
      {"dpkg_options", recipe.dpkg_options},
      {"customize_script", recipe.customize_script},
      {"user", recipe.user},
      {"working_dir", recipe.working_dir},
      {"env", recipe.env},
      {"cmd", recipe.cmd},
  };
  // Only when there are some: the hashes (and cached archives) of plain builds stay as they were.
  if (!recipe.pip_requirements.empty()) doc["pip_requirements"] = recipe.pip_requirements;
  return Sha256Hex(doc.dump());
}

std::vector<std::string> MmdebstrapArgv(const Recipe& recipe, const MmdebstrapOptions& options) {
  std::vector<std::string> argv = {
      "mmdebstrap",
      options.as_root ? "--mode=root" : "--mode=unshare",
      // essential + --include: no apt, no init system; apt still resolves the includes from
      // outside the tree. A sandbox image never installs Debian packages at run time.
      "--variant=essential",
      "--include=" + JoinComma(recipe.packages),
  };
  for (const auto& option : recipe.dpkg_options) argv.push_back("--dpkgopt=" + option);
  // mmdebstrap runs the hook with sh -c, the tree's root as $1.
  argv.push_back("--customize-hook=sh " + ShellQuote(options.hook_path) + " \"$1\"");
  if (!recipe.pip_requirements.empty())
    argv.push_back("--customize-hook=" + PipHook(recipe, options));
  argv.push_back(recipe.suite);
  argv.push_back(options.output);
  if (!options.mirror.empty()) argv.push_back(options.mirror);
  return argv;
}

}  // namespace sandbox::rootfs
