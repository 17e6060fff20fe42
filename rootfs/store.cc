#include "rootfs/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "rootfs/archive_reader.h"
#include "rootfs/digest.h"
#include "rootfs/file_lock.h"
#include "rootfs/image_formats.h"
#include "rootfs/image_name.h"
#include "rootfs/image_source.h"
#include "rootfs/oci_json.h"
#include "rootfs/safe_extract.h"
#include "runtime/base/files.h"
#include "runtime/base/json_parse.h"
#include "runtime/base/time_format.h"

namespace sandbox::rootfs {
namespace {

using Json = nlohmann::json;
using NameMap = std::map<std::string, std::string>;  // name -> "sha256:<hex>"

constexpr std::string_view kTempPrefix = ".tmp-";
constexpr char kNamesFile[] = "names.json";
constexpr char kMetaFile[] = "meta.json";
constexpr char kConfigFile[] = "config.json";

bool IsHexPrefix(std::string_view text) {
  return !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

std::string JsonDump(const Json& json) {
  // Names and source paths come from outside: never throw on invalid UTF-8.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<std::vector<std::string>> ListDirNames(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return names;
    return FailSys("opendir", path);
  }
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return names;
}

}  // namespace

ImageStore::ImageStore(std::string state_dir) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(state_dir, ec);
  state_dir_ = ec ? std::move(state_dir) : absolute.lexically_normal().string();
  while (state_dir_.size() > 1 && state_dir_.back() == '/') state_dir_.pop_back();
}

std::string ImageStore::DefaultStateDir() {
  if (const char* dir = std::getenv("SANDBOX_STATE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (::geteuid() == 0) return "/var/lib/mcp-sandbox";
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/mcp-sandbox";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    return std::string(home) + "/.local/state/mcp-sandbox";
  }
  return "/tmp/mcp-sandbox-" + std::to_string(::geteuid());
}

namespace {

struct StorePaths {
  std::string images;
  std::string Image(const std::string& hex) const { return images + "/" + hex; }
  std::string Names() const { return images + "/" + kNamesFile; }
  std::string NamesLock() const { return images + "/.names.lock"; }
  std::string ImageLock(const std::string& hex) const { return images + "/.lock-" + hex; }
};

bool IsStored(const StorePaths& paths, const std::string& hex) {
  struct stat st {};
  return ::stat((paths.Image(hex) + "/" + kMetaFile).c_str(), &st) == 0;
}

Result<NameMap> ReadNames(const StorePaths& paths) {
  NameMap names;
  auto content = ReadFile(paths.Names());
  if (!content) {
    if (content.error().sys_errno == ENOENT) return names;
    return Fail(std::move(content.error()));
  }
  auto json = ParseJsonBounded(*content);
  if (!json || !json->is_object()) {
    return Fail(ErrorCode::kInternal, "{} is corrupt", paths.Names());
  }
  for (const auto& [name, digest] : json->items()) {
    if (digest.is_string()) names[name] = digest.get<std::string>();
  }
  return names;
}

Status WriteNames(const StorePaths& paths, const NameMap& names) {
  Json json = Json::object();
  for (const auto& [name, digest] : names) json[name] = digest;
  return WriteFileAtomic(paths.Names(), JsonDump(json));
}

// Temp entries are ".tmp-<kind>-<hex>-XXXXXX": staging dirs of imports and removals, made
// and used only under the lock of image <hex>; and ".tmp-spool-<pid>-XXXXXX", decompressed
// archives, unlinked as soon as they are open.
std::string TempName(const StorePaths& paths, std::string_view kind, std::string_view id) {
  return fmt::format("{}/{}{}-{}-XXXXXX", paths.images, kTempPrefix, kind, id);
}

// Removes what killed imports and removals left. An image's temp dirs are stale when nobody
// holds its lock (robust even across pid namespaces); a spool file when its process is gone.
void SweepStaleTemps(const StorePaths& paths) {
  auto names = ListDirNames(paths.images);
  if (!names) return;
  for (const auto& name : *names) {
    if (name.compare(0, kTempPrefix.size(), kTempPrefix) != 0) continue;
    size_t kind_end = name.find('-', kTempPrefix.size());
    if (kind_end == std::string::npos) continue;
    std::string_view kind =
        std::string_view(name).substr(kTempPrefix.size(), kind_end - kTempPrefix.size());
    std::string_view id = std::string_view(name).substr(kind_end + 1, 64);
    std::optional<FileLock> lock;
    if (kind == "spool") {
      long pid = std::strtol(name.c_str() + kind_end + 1, nullptr, 10);
      if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    } else if (IsSha256Hex(id)) {
      auto locked = FileLock::TryExclusive(paths.ImageLock(std::string(id)));
      if (!locked || !*locked) continue;  // an import or removal of that image is running
      lock = std::move(*locked);
    } else {
      continue;
    }
    spdlog::debug("removing {} left by an interrupted import", name);
    if (auto status = RemoveTree(paths.images + "/" + name); !status) {
      spdlog::warn("cannot remove {}: {}", name, status.error().message);
    }
  }
}

// Unpacks `image` into a staging directory and renames it into place. The caller holds the
// image's lock and has checked it is not stored yet.
Status Unpack(const StorePaths& paths, const ResolvedImage& image, const std::string& source,
              const ImportOptions& options) {
  std::string staging = TempName(paths, "import", image.config_hex);
  if (::mkdtemp(staging.data()) == nullptr) return FailSys("mkdtemp", staging);
  struct StagingGuard {
    std::string path;
    bool keep = false;
    ~StagingGuard() {
      if (!keep) (void)RemoveTree(path);
    }
  } guard{staging};
  const std::string rootfs = staging + "/rootfs";
  if (::chmod(staging.c_str(), 0755) != 0) return FailSys("chmod", staging);
  if (::mkdir(rootfs.c_str(), 0755) != 0) return FailSys("mkdir", rootfs);

  ExtractLimits limits;
  limits.max_file_bytes = options.max_file_bytes;
  limits.max_entries = options.max_entries;
  limits.max_path_bytes = options.max_path_bytes;
  SBX_ASSIGN_OR_RETURN(auto applier, LayerApplier::Create(rootfs, limits));

  ImportProgress progress;
  progress.layer_count = image.layers.size();
  for (const auto& layer : image.layers) progress.bytes_total += layer.blob.size;
  uint64_t budget = options.max_total_bytes;
  uint64_t bytes_before = 0;
  for (size_t i = 0; i < image.layers.size(); ++i) {
    const LayerToApply& layer = image.layers[i];
    std::string what = fmt::format("layer {}/{} ({})", i + 1, image.layers.size(), layer.label);
    auto reader = LayerReader::Open(layer.blob, budget);
    if (!reader) return Fail(std::move(reader.error()).Context(what));
    progress.layer = i + 1;
    progress.bytes_done = bytes_before;
    if (options.progress) {
      options.progress(progress);
      (*reader)->set_progress([&](uint64_t read) {
        progress.bytes_done = bytes_before + read;
        options.progress(progress);
      });
    }
    if (auto status = applier->ApplyLayer(**reader); !status) {
      return Fail(std::move(status.error()).Context(what));
    }
    auto digests = (*reader)->Finish();
    if (!digests) return Fail(std::move(digests.error()).Context(what));
    if (!layer.blob_hex.empty() && digests->blob_hex != layer.blob_hex) {
      return Fail(ErrorCode::kInvalidArgument,
                  "{}: digest mismatch: expected sha256:{}, got sha256:{}", what, layer.blob_hex,
                  digests->blob_hex);
    }
    if (digests->diff_id_hex != layer.diff_id_hex) {
      return Fail(ErrorCode::kInvalidArgument,
                  "{}: diff_id mismatch: the config says sha256:{}, the layer is sha256:{}", what,
                  layer.diff_id_hex, digests->diff_id_hex);
    }
    budget -= std::min(budget, digests->uncompressed_bytes);
    bytes_before += layer.blob.size;
  }
  for (const char* mount_point : kRootfsMountPoints) {
    SBX_TRY(applier->EnsureDirectory(mount_point));
  }
  SBX_TRY(applier->Finish());

  const ExtractStats& stats = applier->stats();
  const uint64_t size_bytes = stats.tree_bytes;  // counted while unpacking: no second walk
  Json meta = {
      {"digest", Sha256Digest(image.config_hex)},
      {"created", image.config.created.empty() ? NowRfc3339() : image.config.created},
      {"imported", NowRfc3339()},
      {"size_bytes", size_bytes},
      {"format", std::string(ImageFormatName(image.format))},
      {"source", source},
      {"layers", image.layers.size()},
      {"stats",
       {{"entries", stats.entries},
        {"files", stats.files},
        {"directories", stats.directories},
        {"symlinks", stats.symlinks},
        {"hardlinks", stats.hardlinks},
        {"whiteouts", stats.whiteouts},
        {"skipped_special", stats.skipped_special},
        {"skipped_links", stats.skipped_links},
        {"stripped_setid", stats.stripped_setid},
        {"dropped_xattrs", stats.dropped_xattrs}}},
  };
  SBX_TRY(WriteFile(staging + "/" + kConfigFile, image.config_json));
  SBX_TRY(WriteFile(staging + "/" + kMetaFile, JsonDump(meta)));
  // The rename is what makes the image visible: a reader sees all of it or nothing.
  if (::rename(staging.c_str(), paths.Image(image.config_hex).c_str()) != 0) {
    return FailSys("rename", paths.Image(image.config_hex));
  }
  guard.keep = true;
  spdlog::debug("imported sha256:{}: {} entries, {} bytes", image.config_hex, stats.entries,
                size_bytes);
  return {};
}

// Moves an image out of sight, then deletes it.
Status RemoveImageDir(const StorePaths& paths, const std::string& hex) {
  SBX_ASSIGN_OR_RETURN(FileLock lock, FileLock::Exclusive(paths.ImageLock(hex)));
  std::string trash = TempName(paths, "rm", hex);
  if (::mkdtemp(trash.data()) == nullptr) return FailSys("mkdtemp", trash);
  std::string target = trash + "/" + hex;
  if (::rename(paths.Image(hex).c_str(), target.c_str()) != 0) {
    int err = errno;
    (void)RemoveTree(trash);
    if (err == ENOENT) return {};
    return FailSys("rename", paths.Image(hex), err);
  }
  return RemoveTree(trash);
}

Status MapNames(const StorePaths& paths, const std::string& hex,
                const std::vector<std::string>& names) {
  if (names.empty()) return {};
  SBX_ASSIGN_OR_RETURN(FileLock lock, FileLock::Exclusive(paths.NamesLock()));
  if (!IsStored(paths, hex)) {
    return Fail(ErrorCode::kNotFound, "image sha256:{} was removed while it was imported", hex);
  }
  SBX_ASSIGN_OR_RETURN(NameMap map, ReadNames(paths));
  for (const auto& name : names) map[name] = Sha256Digest(hex);
  return WriteNames(paths, map);
}

Result<StoredImage> LoadImage(const StorePaths& paths, const std::string& hex,
                              const NameMap& names) {
  const std::string dir = paths.Image(hex);
  auto meta_text = ReadFile(dir + "/" + kMetaFile);
  if (!meta_text) {
    if (meta_text.error().sys_errno == ENOENT) {
      return Fail(ErrorCode::kNotFound, "image sha256:{} is not in the store", hex);
    }
    return Fail(std::move(meta_text.error()));
  }
  auto parsed_meta = ParseJsonBounded(*meta_text);
  if (!parsed_meta || !parsed_meta->is_object()) {
    return Fail(ErrorCode::kInternal, "{}/{} is corrupt", dir, kMetaFile);
  }
  const Json& meta = *parsed_meta;
  SBX_ASSIGN_OR_RETURN(std::string config_text, ReadFile(dir + "/" + kConfigFile));
  SBX_ASSIGN_OR_RETURN(ParsedConfig parsed, ParseImageConfig(config_text));
  StoredImage image;
  image.digest = Sha256Digest(hex);
  image.rootfs = dir + "/rootfs";
  image.config = std::move(parsed.config);
  if (auto it = meta.find("size_bytes"); it != meta.end() && it->is_number_unsigned()) {
    image.size_bytes = it->get<uint64_t>();
  }
  if (auto it = meta.find("created"); it != meta.end() && it->is_string()) {
    image.created = it->get<std::string>();
  }
  for (const auto& [name, digest] : names) {
    if (digest == image.digest) image.names.push_back(name);
  }
  return image;
}

// The hex digest for a digest or unique digest prefix ("sha256:ab12", "ab12").
Result<std::string> ResolveDigest(const StorePaths& paths, std::string_view query) {
  std::string_view hex = query;
  if (hex.substr(0, 7) == "sha256:") hex.remove_prefix(7);
  if (!IsHexPrefix(hex)) {
    return Fail(ErrorCode::kNotFound, "no image named '{}'", query);
  }
  SBX_ASSIGN_OR_RETURN(auto entries, ListDirNames(paths.images));
  std::vector<std::string> matches;
  for (const auto& entry : entries) {
    if (IsSha256Hex(entry) && entry.compare(0, hex.size(), hex) == 0 && IsStored(paths, entry)) {
      matches.push_back(entry);
    }
  }
  if (matches.empty()) return Fail(ErrorCode::kNotFound, "no image named '{}'", query);
  if (matches.size() > 1) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' matches {} images; give more of the digest",
                query, matches.size());
  }
  return matches.front();
}

// A name as given, or docker's implied ":latest".
const std::string* LookupName(const NameMap& names, const std::string& name) {
  if (auto it = names.find(name); it != names.end()) return &it->second;
  if (name.find(':') == std::string::npos) {
    if (auto it = names.find(name + ":latest"); it != names.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace

Result<StoredImage> ImageStore::Import(const std::string& path, const ImportOptions& options) {
  StorePaths paths{state_dir_ + "/images"};
  SBX_TRY(MakeDirs(paths.images));
  SweepStaleTemps(paths);
  if (!options.name.empty() && !IsValidImageName(options.name)) {
    return Fail(ErrorCode::kInvalidArgument,
                "invalid image name '{}' (letters, digits and . _ - : / @ +, up to 255)",
                options.name);
  }
  auto source = ImageSource::Open(path, paths.images, options.max_total_bytes, options.max_entries);
  if (!source) return Fail(std::move(source.error()).Context(path));
  auto image = ResolveImage(**source, options.name);
  if (!image) return Fail(std::move(image.error()).Context(path));
  const std::string hex = image->config_hex;

  std::vector<std::string> names;
  if (!options.name.empty()) {
    names.push_back(options.name);
  } else {
    for (const auto& name : image->names) {
      if (IsValidImageName(name)) names.push_back(name);
    }
  }

  // Identified by its config digest before any layer is read: a stored image is not unpacked
  // again, and of two racing imports the second waits for the first and then finds it.
  bool reused = IsStored(paths, hex);
  if (!reused) {
    SBX_ASSIGN_OR_RETURN(FileLock lock, FileLock::Exclusive(paths.ImageLock(hex)));
    reused = IsStored(paths, hex);
    if (!reused) {
      if (auto status = Unpack(paths, *image, path, options); !status) {
        return Fail(std::move(status.error()).Context(path));
      }
    }
  }
  SBX_TRY(MapNames(paths, hex, names));
  SBX_ASSIGN_OR_RETURN(NameMap all_names, ReadNames(paths));
  SBX_ASSIGN_OR_RETURN(StoredImage stored, LoadImage(paths, hex, all_names));
  stored.reused = reused;
  return stored;
}

Result<StoredImage> ImageStore::Find(const std::string& name_or_digest) const {
  StorePaths paths{state_dir_ + "/images"};
  SBX_ASSIGN_OR_RETURN(NameMap names, ReadNames(paths));
  if (const std::string* digest = LookupName(names, name_or_digest)) {
    SBX_ASSIGN_OR_RETURN(std::string hex, ParseSha256Digest(*digest));
    return LoadImage(paths, hex, names);
  }
  SBX_ASSIGN_OR_RETURN(std::string hex, ResolveDigest(paths, name_or_digest));
  return LoadImage(paths, hex, names);
}

Result<std::vector<StoredImage>> ImageStore::List() const {
  StorePaths paths{state_dir_ + "/images"};
  SBX_ASSIGN_OR_RETURN(NameMap names, ReadNames(paths));
  SBX_ASSIGN_OR_RETURN(auto entries, ListDirNames(paths.images));
  std::vector<StoredImage> images;
  for (const auto& entry : entries) {
    if (!IsSha256Hex(entry)) continue;
    auto image = LoadImage(paths, entry, names);
    if (!image) {
      if (image.error().code != ErrorCode::kNotFound) {
        spdlog::warn("skipping image {}: {}", entry, image.error().message);
      }
      continue;  // removed meanwhile
    }
    images.push_back(std::move(*image));
  }
  std::sort(images.begin(), images.end(), [](const StoredImage& a, const StoredImage& b) {
    return a.created != b.created ? a.created > b.created : a.digest < b.digest;
  });
  return images;
}

Status ImageStore::Remove(const std::string& name_or_digest, const RemovalCheck& may_remove) {
  StorePaths paths{state_dir_ + "/images"};
  SBX_ASSIGN_OR_RETURN(FileLock lock, FileLock::Exclusive(paths.NamesLock()));
  SBX_ASSIGN_OR_RETURN(NameMap names, ReadNames(paths));
  std::string hex;
  if (const std::string* found = LookupName(names, name_or_digest)) {
    const std::string digest = *found;  // the map entry goes below
    SBX_ASSIGN_OR_RETURN(hex, ParseSha256Digest(digest));
    std::string name =
        names.count(name_or_digest) > 0 ? name_or_digest : name_or_digest + ":latest";
    names.erase(name);
    bool still_named = std::any_of(names.begin(), names.end(),
                                   [&](const auto& entry) { return entry.second == digest; });
    if (!still_named && may_remove) SBX_TRY(may_remove(paths.Image(hex) + "/rootfs"));
    SBX_TRY(WriteNames(paths, names));
    if (still_named) return {};
  } else {
    SBX_ASSIGN_OR_RETURN(hex, ResolveDigest(paths, name_or_digest));
    if (may_remove) SBX_TRY(may_remove(paths.Image(hex) + "/rootfs"));
    std::string full_digest = Sha256Digest(hex);
    std::erase_if(names, [&](const auto& entry) { return entry.second == full_digest; });
    SBX_TRY(WriteNames(paths, names));
  }
  // Names go first: a crash in between leaves an unnamed image, never a name without one.
  return RemoveImageDir(paths, hex);
}

}  // namespace sandbox::rootfs
