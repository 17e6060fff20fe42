// `mcp-sandbox image build`: the command line over the image recipe's builder
// (rootfs/recipe/image_builder.h): flags, progress on a terminal, the import into the store.
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "rootfs/recipe/image_batteries.h"
#include "rootfs/recipe/image_builder.h"
#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "runtime/base/units.h"
#include "tools/cli/image_build_command.h"

namespace sandbox::cli {
namespace {

using namespace rootfs;  // the builder's vocabulary: BuildOptions, ImageVariant, ...
using Clock = std::chrono::steady_clock;

constexpr std::string_view kUsage =
    R"(usage: mcp-sandbox image build [--variant default|small] [--suite SUITE] [--name NAME]
                                [--mirror URL] [--output FILE] [--rebuild] [--list-modules]
                                [--pip REQ... [--index-url URL] [--wheelhouse DIR]]

Builds the sandbox's Python image from Debian packages with mmdebstrap (no Docker, no PyPI)
and imports it into the image store. The OCI archive is kept in STATE_DIR/archives for the
Docker backend and for the next build; a build whose recipe has not changed does nothing.

  --variant V   default: python3 with a batteries-included data stack from Debian (numpy,
                pandas, matplotlib, scikit-learn, statsmodels, sympy, plotly, opencv, ...;
                docs/images.md lists them; store name "python"); small: python3 only
                ("python-small", for tests)
  --suite S     Debian suite (default trixie, Python 3.13)
  --name N      store name (default: python or python-small)
  --mirror URL  Debian mirror (default deb.debian.org, with updates and security)
  --output F    also write the archive to F (loadable with docker load, skopeo, podman)
  --rebuild     build again even when the archive and the stored image are current
  --list-modules print the modules the variant's image promises and their Debian packages,
                "MODULE PACKAGE" a line, and build nothing
  --pip REQ     also pip-install REQ into the image (repeatable, or comma-separated), for
                what Debian does not package, e.g. pyarrow==18.1.0; pin with == so a rebuild
                gives the same image. Recorded in the recipe (a changed list rebuilds) and,
                exact versions, in /usr/share/mcp-sandbox/pip-freeze.txt in the image
  --index-url U the package index for --pip (default: $SANDBOX_INDEX_URL), e.g.
                https://pypi.org/simple or a devpi/Nexus/Artifactory mirror
  --wheelhouse D a directory of wheels for --pip, tried first (default: $SANDBOX_WHEELHOUSE)
  --state-dir D the image store (default: $SANDBOX_STATE_DIR, /var/lib/mcp-sandbox as root)

Runs as root (mmdebstrap --mode=root) or as a user with subordinate ids (--mode=unshare).

example:
  mcp-sandbox image build                       # the default image, a few minutes
  mcp-sandbox image build --variant small --output /tmp/python-small.tar
  mcp-sandbox image build --name python-arrow --pip pyarrow==18.1.0 --index-url https://pypi.org/simple
)";

// Stage lines and one self-overwriting status line on a terminal; nothing otherwise.
class TerminalProgress {
 public:
  TerminalProgress() : enabled_(::isatty(STDERR_FILENO) == 1), started_(Clock::now()) {}
  ~TerminalProgress() { ClearStatus(); }

  void Update(std::string_view stage, std::string_view detail) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto now = Clock::now();
    if (detail.empty()) {
      ClearStatus();
      std::cerr << "==> " << stage << "\n";
      return;
    }
    // Status lines come fast (import progress, dpkg); ten redraws a second are enough.
    if (status_shown_ && now - last_status_ < std::chrono::milliseconds(100)) return;
    last_status_ = now;
    ClearStatus();
    std::string line =
        fmt::format("    [{:.0f} s] {}",
                    std::chrono::duration<double>(Clock::now() - started_).count(), detail);
    size_t width = TerminalWidth();
    if (line.size() >= width) line.resize(width - 1);
    std::cerr << line << std::flush;
    status_shown_ = true;
  }

  // Erases the status line, so what follows starts on a clean line.
  void Finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    ClearStatus();
  }

 private:
  void ClearStatus() {
    if (status_shown_) std::cerr << "\r\033[K" << std::flush;
    status_shown_ = false;
  }
  static size_t TerminalWidth() {
    struct winsize ws {};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
    return 80;
  }

  bool enabled_;
  bool status_shown_ = false;
  Clock::time_point started_;
  Clock::time_point last_status_{};
  std::mutex mutex_;
};

struct CommandFlags {
  BuildOptions options;
  std::string state_dir;
  bool help = false;
  bool list_modules = false;
};

// Returns the exit code of a usage error, or 0.
int ParseBuildFlags(const std::vector<std::string>& args, CommandFlags* flags) {
  const std::map<std::string, std::string*> value_flags = {
      {"--variant", nullptr},
      {"--suite", &flags->options.suite},
      {"--name", &flags->options.name},
      {"--mirror", &flags->options.mirror},
      {"--output", &flags->options.output_path},
      {"--pip", nullptr},
      {"--index-url", &flags->options.pip_index_url},
      {"--wheelhouse", &flags->options.pip_wheelhouse},
      // The caller opened the store from it (tools/cli/cmd_image.cc); accepted here too.
      {"--state-dir", &flags->state_dir},
  };
  auto usage_error = [](const std::string& message) {
    std::cerr << "mcp-sandbox image build: " << message << "\n";
    return 2;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (auto eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "--help" || flag == "-h") {
      flags->help = true;
      continue;
    }
    if (flag == "--list-modules") {
      if (value) return usage_error("flag --list-modules takes no value");
      flags->list_modules = true;
      continue;
    }
    if (flag == "--rebuild") {
      if (value) return usage_error("flag --rebuild takes no value");
      flags->options.rebuild = true;
      continue;
    }
    auto it = value_flags.find(flag);
    if (it == value_flags.end()) {
      if (flag.rfind('-', 0) == 0) return usage_error("unknown flag " + flag + " (see --help)");
      return usage_error("unexpected argument '" + flag + "' (see --help)");
    }
    if (!value) {
      if (i + 1 >= args.size()) return usage_error("flag " + flag + " needs a value");
      value = args[++i];
    }
    if (flag == "--pip") {
      // Comma-separated lists too; a requirement never holds a comma outside its specifiers,
      // so "a>=1,<2" is split at the comma only where a name follows.
      size_t start = 0;
      while (start <= value->size()) {
        size_t comma = value->find(',', start);
        while (comma != std::string::npos && comma + 1 < value->size() &&
               std::string_view("<>=!~").find((*value)[comma + 1]) != std::string_view::npos) {
          comma = value->find(',', comma + 1);
        }
        std::string item =
            value->substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!item.empty()) flags->options.pip.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (flag == "--variant") {
      auto variant = ParseImageVariant(*value);
      if (!variant) return usage_error(variant.error().message);
      flags->options.variant = *variant;
    } else {
      *it->second = *value;
    }
  }
  // The environment's index and wheelhouse, as serve reads them, when no flag names one.
  for (auto [variable, field] : {std::pair{"SANDBOX_INDEX_URL", &flags->options.pip_index_url},
                                 std::pair{"SANDBOX_WHEELHOUSE", &flags->options.pip_wheelhouse}}) {
    const char* env = std::getenv(variable);
    if (field->empty() && env != nullptr) *field = env;
  }
  if (auto recipe = RecipeFor(flags->options); !recipe) {
    return usage_error(recipe.error().message);
  }
  if (!flags->options.pip_wheelhouse.empty() && flags->options.pip_wheelhouse[0] != '/') {
    return usage_error("--wheelhouse must be an absolute path");
  }
  if (!flags->options.name.empty()) {
    if (auto valid = ValidateImageName(flags->options.name); !valid) {
      return usage_error(valid.error().message);
    }
  }
  return 0;
}

std::string ShortDigest(const std::string& digest) { return digest.substr(0, 19); }

}  // namespace

int ImageBuildCommand(const std::vector<std::string>& args, rootfs::ImageStore& store) {
  CommandFlags flags;
  if (int code = ParseBuildFlags(args, &flags); code != 0) return code;
  if (flags.help) {
    std::cout << kUsage;
    return 0;
  }
  // What the variant's image promises code: "MODULE PACKAGE" a line (what tests import).
  if (flags.list_modules) {
    if (flags.options.variant == ImageVariant::kDefault) {
      for (const auto& battery : DefaultImageBatteries()) {
        std::cout << battery.module << " " << battery.package << "\n";
      }
    }
    return 0;
  }
  BuildOptions& options = flags.options;
  options.state_dir = store.state_dir();
  std::string name = options.name.empty() ? DefaultImageName(options.variant) : options.name;
  auto fail = [](const Error& error) {
    std::cerr << "mcp-sandbox image build: " << error.message << "\n";
    return 1;
  };

  // Nothing to do when the archive is current and the store holds exactly its image.
  if (!options.rebuild) {
    auto cached = FindCachedBuild(options);
    if (!cached) return fail(cached.error());
    auto stored = store.Find(name);
    if (*cached && stored && stored->digest == (*cached)->config_digest) {
      if (!options.output_path.empty()) {
        if (auto copied = CopyFileAtomic((*cached)->archive_path, options.output_path); !copied) {
          return fail(copied.error());
        }
      }
      std::cout << fmt::format(
          "{} is up to date ({}, recipe {}); nothing to do (--rebuild builds it again)\n", name,
          ShortDigest(stored->digest), (*cached)->recipe_hash.substr(0, 12));
      return 0;
    }
  }

  TerminalProgress progress;
  options.progress = [&progress](std::string_view stage, std::string_view detail) {
    progress.Update(stage, detail);
  };
  auto built = BuildImage(options);
  if (!built) {
    progress.Finish();
    return fail(built.error());
  }

  progress.Update("importing into the image store", "");
  ImportOptions import_options;
  import_options.name = name;
  import_options.progress = [&progress](const ImportProgress& p) {
    if (p.bytes_total == 0) return;
    progress.Update("",
                    fmt::format("{} of {}", FormatBytes(p.bytes_done), FormatBytes(p.bytes_total)));
  };
  auto imported = store.Import(built->archive_path, import_options);
  progress.Finish();
  if (!imported) return fail(std::move(imported.error()).Context("import " + built->archive_path));

  std::string how =
      built->reused ? "archive reused" : fmt::format("built in {:.0f} s", built->seconds);
  std::cout << fmt::format("{}  {}  {} ({}, {}), {}; archive {} ({}): {}\n", name,
                           ShortDigest(imported->digest), ImageVariantName(options.variant),
                           options.suite, FormatBytes(imported->size_bytes), how, built->reference,
                           FormatBytes(built->archive_bytes), built->archive_path);
  return 0;
}

int ImageBuildCommand(const std::vector<std::string>& args) {
  // The recipe parses its own flags; only --state-dir also picks the store here.
  std::string state_dir = ImageStore::DefaultStateDir();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--state-dir" && i + 1 < args.size()) state_dir = args[i + 1];
    if (args[i].rfind("--state-dir=", 0) == 0) state_dir = args[i].substr(12);
  }
  ImageStore store(state_dir);
  return ImageBuildCommand(args, store);
}

}  // namespace sandbox::cli
