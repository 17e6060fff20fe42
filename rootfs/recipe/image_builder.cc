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
  mm.pip_wheelhouse = options.pip_wheelhouse;
  mm.pip_index_url = options.pip_index_url;
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

Result<Recipe> RecipeFor(const BuildOptions& options) {
  SBX_ASSIGN_OR_RETURN(Recipe recipe, MakeRecipe(options.variant, options.suite));
  SBX_TRY(AddPipRequirements(recipe, options.pip));
  if (!recipe.pip_requirements.empty() && options.pip_wheelhouse.empty() &&
      options.pip_index_url.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--pip needs somewhere to install from: --index-url (or SANDBOX_INDEX_URL) or "
                "--wheelhouse (or SANDBOX_WHEELHOUSE)");
  }
  return recipe;
}

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

Result<std::optional<BuildResult>> FindCachedBuild(const BuildOptions& options) {
  SBX_ASSIGN_OR_RETURN(Recipe recipe, RecipeFor(options));
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
  SBX_ASSIGN_OR_RETURN(Recipe recipe, RecipeFor(options));
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

}  // namespace sandbox::rootfs
