#include "rootfs/recipe/image_builder.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "rootfs/digest.h"
#include "rootfs/file_lock.h"
#include "rootfs/oci_json.h"
#include "rootfs/recipe/mmdebstrap_process.h"
#include "rootfs/recipe/oci_archive_writer.h"
#include "rootfs/recipe/oci_documents.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox::rootfs {
namespace {

using Clock = std::chrono::steady_clock;

// Store names follow docker's repository-name rules closely enough to be one component of a
// docker reference (mcp-sandbox/<name>:latest) and a file name.
Status ValidateImageName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 && name.front() != '.' && name.front() != '-';
  for (char c : name) {
    ok = ok &&
         ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_');
  }
  if (!ok) {
    return Fail(ErrorCode::kInvalidArgument,
                "bad image name '{}' (lowercase letters, digits, '.', '_' and '-')", name);
  }
  return {};
}

struct ResolvedPaths {
  std::string name;
  std::string archives_dir;
  std::string base;  // archives_dir/<name>-<variant>-<suite>
};

Result<ResolvedPaths> ResolvePaths(const BuildOptions& options) {
  ResolvedPaths paths;
  paths.name = options.name.empty() ? DefaultImageName(options.variant) : options.name;
  SBX_TRY(ValidateImageName(paths.name));
  std::string state_dir =
      options.state_dir.empty() ? ImageStore::DefaultStateDir() : options.state_dir;
  paths.archives_dir = state_dir + "/archives";
  paths.base = fmt::format("{}/{}-{}-{}", paths.archives_dir, paths.name,
                           ImageVariantName(options.variant), options.suite);
  return paths;
}

// RFC 3339 UTC; SOURCE_DATE_EPOCH (reproducible-builds.org) wins over the clock when set.
std::string CreatedTimestamp() {
  std::time_t now = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch) {
    char* end = nullptr;
    long long value = std::strtoll(epoch, &end, 10);
    if (end != nullptr && *end == '\0' && value >= 0) now = static_cast<std::time_t>(value);
  }
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The record kept beside each cached archive (<base>.json): what it was built from.
std::string RecordJson(const BuildResult& result, const BuildOptions& options) {
  nlohmann::json doc = {
      {"name", result.name},
      {"variant", ImageVariantName(options.variant)},
      {"suite", options.suite},
      {"reference", result.reference},
      {"recipe_hash", result.recipe_hash},
      {"config_digest", result.config_digest},
      {"archive_bytes", result.archive_bytes},
      {"layer_bytes", result.layer_bytes},
  };
  return doc.dump(2) + "\n";
}

// The build's lock, saying so when another build of the same image holds it.
Result<FileLock> LockBuild(const std::string& path, const BuildOptions& options) {
  SBX_ASSIGN_OR_RETURN(std::optional<FileLock> free, FileLock::TryExclusive(path));
  if (free) return std::move(*free);
  if (options.progress) options.progress("waiting for another build of this image", "");
  return FileLock::Exclusive(path);
}

// Removes a directory tree when it goes out of scope.
class TreeRemover {
 public:
  explicit TreeRemover(std::string path) : path_(std::move(path)) {}
  ~TreeRemover() { (void)RemoveTree(path_); }
  TreeRemover(const TreeRemover&) = delete;
  TreeRemover& operator=(const TreeRemover&) = delete;

 private:
  std::string path_;
};

// Build dirs of this archive left by a build that was killed. Only called under the build
// lock, so none of them belongs to a running build.
void RemoveStaleBuildDirs(const std::string& base) {
  std::filesystem::path prefix(base + ".build-");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(prefix.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix.filename().string(), 0) == 0) (void)RemoveTree(entry.path().string());
  }
}

Result<std::string> MakeTempDir(const std::string& pattern_prefix) {
  std::string pattern = pattern_prefix + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return FailSys("mkdtemp", pattern);
  return pattern;
}

// Copies `from` to `to` through a temp file beside `to`, so `to` is never half written.
Status CopyFileAtomic(const std::string& from, const std::string& to) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return FailSys("open", from);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return FailSys("fstat", from);
  std::string tmp = to + ".tmp." + std::to_string(::getpid());
  Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) return FailSys("open", tmp);
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t n = ::sendfile(out.get(), in.get(), nullptr, static_cast<size_t>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::unlink(tmp.c_str());
      return FailSys("sendfile", to, err);
    }
    left -= n;
  }
  if (::fsync(out.get()) != 0 || ::rename(tmp.c_str(), to.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return FailSys("write", to, err);
  }
  return {};
}

void Report(const BuildOptions& options, std::string_view stage, std::string_view detail = {}) {
  if (options.progress) options.progress(stage, detail);
}

// Starts mmdebstrap on `recipe`, its tarball on stdout and its messages going to `stage`.
Result<std::unique_ptr<MmdebstrapProcess>> StartMmdebstrap(const Recipe& recipe,
                                                           const BuildOptions& options,
                                                           const std::string& build_dir,
                                                           const std::string& log_path,
                                                           const std::string& stage) {
  std::string hook_path = build_dir + "/customize.sh";
  SBX_TRY(WriteFile(hook_path, recipe.customize_script, 0755));
  MmdebstrapOptions mm;
  // Root builds in a chroot; anyone else in an unprivileged user namespace (needs subuids).
  mm.as_root = ::geteuid() == 0;
  mm.mirror = options.mirror;
  mm.hook_path = hook_path;
  mm.output = "-";
  return MmdebstrapProcess::Start(
      MmdebstrapArgv(recipe, mm),
      [&options, stage](std::string_view line) { Report(options, stage, line); }, log_path);
}

// Writes the image archive around `layer` to `archive_path`; fills in `result`.
Status WriteArchive(const Recipe& recipe, const Blob& layer, const std::string& layer_path,
                    const std::string& archive_path, BuildResult* result) {
  ConfigInputs config_inputs;
  config_inputs.recipe = &recipe;
  config_inputs.architecture = HostArchitecture();
  config_inputs.created = CreatedTimestamp();
  config_inputs.diff_id_hex = layer.hex;  // uncompressed: the blob is the diff
  config_inputs.labels = {
      {"org.opencontainers.image.title", result->name},
      {"org.opencontainers.image.description",
       fmt::format("mcp-sandbox Python image ({} variant, Debian {})",
                   ImageVariantName(recipe.variant), recipe.suite)},
      {"io.mcp-sandbox.recipe", result->recipe_hash},
      {"io.mcp-sandbox.variant", std::string(ImageVariantName(recipe.variant))},
      {"io.mcp-sandbox.suite", recipe.suite},
  };
  OciArchiveParts parts;
  parts.config_json = ImageConfigJson(config_inputs);
  Blob config{Sha256Hex(parts.config_json), parts.config_json.size()};
  parts.manifest_json = ImageManifestJson(config, layer);
  Blob manifest{Sha256Hex(parts.manifest_json), parts.manifest_json.size()};
  parts.index_json = ImageIndexJson(manifest, result->reference);
  parts.docker_manifest_json = DockerSaveManifestJson(config, layer, result->reference);
  parts.layer_path = layer_path;
  parts.layer = layer;
  SBX_TRY(WriteOciArchive(parts, archive_path));

  struct stat st {};
  if (::stat(archive_path.c_str(), &st) != 0) return FailSys("stat", archive_path);
  result->config_digest = Sha256Digest(config.hex);
  result->archive_bytes = static_cast<uint64_t>(st.st_size);
  result->layer_bytes = layer.size;
  return {};
}

}  // namespace

Result<std::optional<BuildResult>> FindCachedBuild(const BuildOptions& options) {
  SBX_ASSIGN_OR_RETURN(Recipe recipe, MakeRecipe(options.variant, options.suite));
  SBX_ASSIGN_OR_RETURN(ResolvedPaths paths, ResolvePaths(options));
  auto text = ReadFile(paths.base + ".json");
  if (!text) return std::optional<BuildResult>();
  auto doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto get_string = [&doc](const char* key) -> std::string {
    auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto get_size = [&doc](const char* key) -> uint64_t {
    auto it = doc.find(key);
    return it != doc.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
  };
  if (!doc.is_object() || get_string("recipe_hash") != RecipeHash(recipe)) {
    return std::optional<BuildResult>();
  }
  BuildResult result;
  result.name = paths.name;
  result.reference = get_string("reference");
  result.archive_path = paths.base + ".tar";
  result.recipe_hash = get_string("recipe_hash");
  result.config_digest = get_string("config_digest");
  result.archive_bytes = get_size("archive_bytes");
  result.layer_bytes = get_size("layer_bytes");
  result.reused = true;
  struct stat st {};
  if (::stat(result.archive_path.c_str(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) != result.archive_bytes ||
      !ParseSha256Digest(result.config_digest)) {
    return std::optional<BuildResult>();
  }
  return std::optional<BuildResult>(std::move(result));
}

Result<BuildResult> BuildImage(const BuildOptions& options) {
  auto started = Clock::now();
  auto elapsed = [&started] {
    return std::chrono::duration<double>(Clock::now() - started).count();
  };
  SBX_ASSIGN_OR_RETURN(Recipe recipe, MakeRecipe(options.variant, options.suite));
  SBX_ASSIGN_OR_RETURN(ResolvedPaths paths, ResolvePaths(options));
  SBX_TRY(MakeDirs(paths.archives_dir));
  SBX_ASSIGN_OR_RETURN(FileLock lock, LockBuild(paths.base + ".lock", options));

  if (!options.rebuild) {
    SBX_ASSIGN_OR_RETURN(auto cached, FindCachedBuild(options));
    if (cached) {
      if (!options.output_path.empty()) {
        SBX_TRY(CopyFileAtomic(cached->archive_path, options.output_path));
      }
      cached->seconds = elapsed();
      return *cached;
    }
  }

  RemoveStaleBuildDirs(paths.base);
  SBX_ASSIGN_OR_RETURN(std::string build_dir, MakeTempDir(paths.base + ".build-"));
  TreeRemover remove_build_dir(build_dir);

  std::string stage = fmt::format("building the root filesystem with mmdebstrap ({}, {} packages)",
                                  recipe.suite, recipe.packages.size());
  Report(options, stage);
  SBX_ASSIGN_OR_RETURN(auto mmdebstrap,
                       StartMmdebstrap(recipe, options, build_dir, paths.base + ".log", stage));
  std::string layer_path = build_dir + "/layer.tar";
  auto layer = WriteLayerFromRootfsTar(mmdebstrap->stdout_fd(), layer_path);
  if (!layer) {
    // A failed mmdebstrap explains a truncated tarball better than the tar reader does.
    if (auto exited = mmdebstrap->Wait(); !exited) {
      return Fail(std::move(exited.error()).Context("build the root filesystem"));
    }
    return Fail(std::move(layer.error()).Context("write the image layer"));
  }

  // The tarball is complete; mmdebstrap still removes its temporary tree (tens of seconds on
  // a busy disk), so the archive is written meanwhile and mmdebstrap's verdict awaited after.
  Report(options, "writing the OCI image archive");
  BuildResult result;
  result.name = paths.name;
  result.reference = DockerReference(paths.name);
  result.archive_path = paths.base + ".tar";
  result.recipe_hash = RecipeHash(recipe);
  std::string tmp_archive = build_dir + "/image.tar";
  auto written = WriteArchive(recipe, *layer, layer_path, tmp_archive, &result);
  // The layer is inside the archive now: free its disk space before anything else.
  ::unlink(layer_path.c_str());
  if (auto exited = mmdebstrap->Wait(); !exited) {
    return Fail(std::move(exited.error()).Context("build the root filesystem"));
  }
  SBX_TRY(written);

  // Archive first, then its record: a record always describes the archive beside it.
  if (::rename(tmp_archive.c_str(), result.archive_path.c_str()) != 0) {
    return FailSys("rename", result.archive_path);
  }
  SBX_TRY(WriteFileAtomic(paths.base + ".json", RecordJson(result, options)));
  if (!options.output_path.empty()) {
    SBX_TRY(CopyFileAtomic(result.archive_path, options.output_path));
  }
  result.seconds = elapsed();
  return result;
}

// ---------------------------------------------------------------------------------------------
// The command line.

namespace {

constexpr std::string_view kUsage =
    R"(usage: mcp-sandbox image build [--variant default|small] [--suite SUITE] [--name NAME]
                                [--mirror URL] [--output FILE] [--rebuild]

Builds the sandbox's Python image from Debian packages with mmdebstrap (no Docker, no PyPI)
and imports it into the image store. The OCI archive is kept in STATE_DIR/archives for the
Docker backend and for the next build; a build whose recipe has not changed does nothing.

  --variant V   default: python3 with numpy, pandas, matplotlib, seaborn, scipy, openpyxl,
                reportlab, pip and venv (store name "python"); small: python3 only
                ("python-small", for tests)
  --suite S     Debian suite (default trixie, Python 3.13)
  --name N      store name (default: python or python-small)
  --mirror URL  Debian mirror (default deb.debian.org, with updates and security)
  --output F    also write the archive to F (loadable with docker load, skopeo, podman)
  --rebuild     build again even when the archive and the stored image are current
  --state-dir D the image store (default: $SANDBOX_STATE_DIR, /var/lib/mcp-sandbox as root)

Runs as root (mmdebstrap --mode=root) or as a user with subordinate ids (--mode=unshare).

example:
  mcp-sandbox image build                       # the default image, about 70 s
  mcp-sandbox image build --variant small --output /tmp/python-small.tar
)";

std::string HumanBytes(uint64_t bytes) {
  if (bytes >= (1ull << 30))
    return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20))
    return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1ull << 20));
  return fmt::format("{} KiB", bytes / 1024);
}

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
};

// Returns the exit code of a usage error, or 0.
int ParseBuildFlags(const std::vector<std::string>& args, CommandFlags* flags) {
  const std::map<std::string, std::string*> value_flags = {
      {"--variant", nullptr},
      {"--suite", &flags->options.suite},
      {"--name", &flags->options.name},
      {"--mirror", &flags->options.mirror},
      {"--output", &flags->options.output_path},
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
    if (flag == "--variant") {
      auto variant = ParseImageVariant(*value);
      if (!variant) return usage_error(variant.error().message);
      flags->options.variant = *variant;
    } else {
      *it->second = *value;
    }
  }
  if (auto recipe = MakeRecipe(flags->options.variant, flags->options.suite); !recipe) {
    return usage_error(recipe.error().message);
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

int BuildImageCommand(const std::vector<std::string>& args, ImageStore& store) {
  CommandFlags flags;
  if (int code = ParseBuildFlags(args, &flags); code != 0) return code;
  if (flags.help) {
    std::cout << kUsage;
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
                    fmt::format("{} of {}", HumanBytes(p.bytes_done), HumanBytes(p.bytes_total)));
  };
  auto imported = store.Import(built->archive_path, import_options);
  progress.Finish();
  if (!imported) return fail(std::move(imported.error()).Context("import " + built->archive_path));

  std::string how =
      built->reused ? "archive reused" : fmt::format("built in {:.0f} s", built->seconds);
  std::cout << fmt::format("{}  {}  {} ({}, {}), {}; archive {} ({}): {}\n", name,
                           ShortDigest(imported->digest), ImageVariantName(options.variant),
                           options.suite, HumanBytes(imported->size_bytes), how, built->reference,
                           HumanBytes(built->archive_bytes), built->archive_path);
  return 0;
}

}  // namespace sandbox::rootfs
