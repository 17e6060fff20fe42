#include "rootfs/docker_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "rootfs/digest.h"
#include "rootfs/file_lock.h"
#include "rootfs/libarchive_handles.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/base/json_parse.h"
#include "runtime/base/time_format.h"

namespace sandbox::rootfs {
namespace {

using Json = nlohmann::json;

constexpr size_t kCopyBufferBytes = 1 << 20;
constexpr char kLayerName[] = "layer.tar";
constexpr char kRepository[] = "mcp-sandbox/stored";
// Recorded with each cached archive; raised when what an archive holds changes, so archives
// written by an older version are rewritten rather than reused.
constexpr int kArchiveFormat = 1;

struct DirDeleter {
  void operator()(DIR* d) const { ::closedir(d); }
};
using Entry = ArchiveEntry;
using DirHandle = std::unique_ptr<DIR, DirDeleter>;

// A pax writer (ustar headers unless a name, owner or size needs an extension). Blocks of
// 1 MiB, for fewer and larger writes; the last one is not padded beyond tar's 512-byte records.
Status ConfigureWriter(archive* writer) {
  if (archive_write_set_format_pax_restricted(writer) != ARCHIVE_OK ||
      archive_write_add_filter_none(writer) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(writer, static_cast<int>(kCopyBufferBytes)) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(writer, 1) != ARCHIVE_OK) {
    return Fail(ArchiveError(writer, "configure tar writer"));
  }
  return {};
}

// One entry of the layer, in the order it is written: parents before children, names sorted
// bytewise, so the same tree always gives the same layer.
struct TreeEntry {
  std::string path;  // relative to the rootfs ("usr/bin/python3")
  struct stat st {};
  std::string symlink;   // symlinks: the target
  std::string hardlink;  // a further name of a regular file: the path of its first name
};

struct TreeScan {
  std::vector<TreeEntry> entries;
  std::map<std::pair<dev_t, ino_t>, std::string> first_names;  // multiply linked files
  uint64_t skipped = 0;  // fifos, sockets, devices: a stored rootfs has none
};

// Appends what is under `dir` (named `prefix` in the layer) to `scan`, depth first. Nothing is
// followed: entries are lstat'ed relative to their directory's fd, directories opened with
// O_NOFOLLOW.
Status ScanDirectory(Fd dir, const std::string& prefix, TreeScan* scan) {
  DirHandle handle(::fdopendir(dir.get()));
  if (!handle) return FailSys("fdopendir", prefix.empty() ? "/" : prefix);
  (void)dir.Release();  // the DIR owns it now
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = ::readdir(handle.get())) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (errno != 0) return FailSys("readdir", prefix);
  std::sort(names.begin(), names.end());
  const int dir_fd = ::dirfd(handle.get());
  for (const std::string& name : names) {
    TreeEntry entry;
    entry.path = prefix.empty() ? name : prefix + "/" + name;
    if (::fstatat(dir_fd, name.c_str(), &entry.st, AT_SYMLINK_NOFOLLOW) != 0) {
      return FailSys("fstatat", entry.path);
    }
    if (S_ISDIR(entry.st.st_mode)) {
      Fd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child) return FailSys("open", entry.path);
      std::string path = entry.path;
      scan->entries.push_back(std::move(entry));
      SBX_TRY(ScanDirectory(std::move(child), path, scan));
      continue;
    }
    if (S_ISLNK(entry.st.st_mode)) {
      std::string target(static_cast<size_t>(entry.st.st_size) + 1, '\0');
      ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
      if (n < 0) return FailSys("readlinkat", entry.path);
      if (static_cast<size_t>(n) >= target.size()) {
        return Fail(ErrorCode::kInternal, "symlink {} changed while it was read", entry.path);
      }
      target.resize(static_cast<size_t>(n));
      entry.symlink = std::move(target);
    } else if (S_ISREG(entry.st.st_mode)) {
      if (entry.st.st_nlink > 1) {
        auto [first, inserted] =
            scan->first_names.try_emplace({entry.st.st_dev, entry.st.st_ino}, entry.path);
        if (!inserted) entry.hardlink = first->second;
      }
    } else {
      ++scan->skipped;
      continue;
    }
    scan->entries.push_back(std::move(entry));
  }
  return {};
}

Result<TreeScan> ScanTree(const std::string& root) {
  Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT) return Fail(ErrorCode::kNotFound, "{} is gone", root);
    return FailSys("open", root);
  }
  TreeScan scan;
  SBX_TRY(ScanDirectory(std::move(dir), "", &scan));
  return scan;
}

// Where the layer writer's bytes go. The sizing pass only counts them (`outer` null); the real
// pass hashes them (the diff_id) and writes them as the data of the outer archive's layer entry.
struct LayerSink {
  archive* outer = nullptr;
  Sha256 hash;
  uint64_t bytes = 0;
  std::optional<Error> error;
};

la_ssize_t WriteLayerBytes(archive*, void* client, const void* buffer, size_t length) {
  auto* sink = static_cast<LayerSink*>(client);
  if (sink->outer != nullptr) {
    la_ssize_t written = archive_write_data(sink->outer, buffer, length);
    if (written != static_cast<la_ssize_t>(length)) {
      sink->error = written < 0 ? ArchiveError(sink->outer, "write the layer")
                                : MakeError(ErrorCode::kInternal,
                                            "the layer grew while it was written (the rootfs "
                                            "changed under the export)");
      return -1;
    }
    sink->hash.Update(buffer, length);
  }
  sink->bytes += length;
  return static_cast<la_ssize_t>(length);
}

Error LayerError(archive* writer, const LayerSink& sink, std::string_view what) {
  if (sink.error) return *sink.error;
  return ArchiveError(writer, what);
}

// Copies the data of regular file `entry` into the layer, checking it is the file scanned.
Status CopyFileData(archive* writer, const LayerSink& sink, const std::string& root,
                    const TreeEntry& entry, std::vector<char>* buffer) {
  const std::string path = root + "/" + entry.path;
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return FailSys("open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailSys("fstat", path);
  if (st.st_ino != entry.st.st_ino || st.st_dev != entry.st.st_dev ||
      st.st_size != entry.st.st_size) {
    return Fail(ErrorCode::kInternal, "{} changed while the image was exported", path);
  }
  auto left = static_cast<uint64_t>(st.st_size);
  while (left > 0) {
    ssize_t n = ::read(fd.get(), buffer->data(), std::min<uint64_t>(buffer->size(), left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailSys("read", path);
    if (n == 0) return Fail(ErrorCode::kInternal, "{} shrank while it was exported", path);
    if (archive_write_data(writer, buffer->data(), static_cast<size_t>(n)) != n) {
      return Fail(LayerError(writer, sink, entry.path));
    }
    left -= static_cast<uint64_t>(n);
  }
  return {};
}

// Writes the layer tar of `scan` into `sink`. Without an outer archive, file data is left out:
// libarchive pads each entry to its declared size, so the byte count is the layer's size.
Status WriteLayer(const std::string& root, const TreeScan& scan, LayerSink* sink) {
  ArchiveWriter writer(archive_write_new());
  if (!writer) return Fail(ErrorCode::kInternal, "archive_write_new failed");
  SBX_TRY(ConfigureWriter(writer.get()));
  if (archive_write_open2(writer.get(), sink, nullptr, WriteLayerBytes, nullptr, nullptr) !=
      ARCHIVE_OK) {
    return Fail(ArchiveError(writer.get(), "open layer writer"));
  }
  std::vector<char> buffer(sink->outer != nullptr ? kCopyBufferBytes : 0);
  for (const TreeEntry& item : scan.entries) {
    Entry entry(archive_entry_new());
    archive_entry_set_pathname(entry.get(), item.path.c_str());
    archive_entry_set_uid(entry.get(), item.st.st_uid);
    archive_entry_set_gid(entry.get(), item.st.st_gid);
    archive_entry_set_perm(entry.get(), item.st.st_mode & 07777);
    // Whole seconds: plain ustar headers, as docker's own layers have them.
    archive_entry_set_mtime(entry.get(), item.st.st_mtim.tv_sec, 0);
    bool has_data = false;
    if (S_ISDIR(item.st.st_mode)) {
      archive_entry_set_filetype(entry.get(), AE_IFDIR);
    } else if (S_ISLNK(item.st.st_mode)) {
      archive_entry_set_filetype(entry.get(), AE_IFLNK);
      archive_entry_set_symlink(entry.get(), item.symlink.c_str());
    } else {
      archive_entry_set_filetype(entry.get(), AE_IFREG);
      if (!item.hardlink.empty()) {
        archive_entry_set_hardlink(entry.get(), item.hardlink.c_str());
        archive_entry_set_size(entry.get(), 0);  // the data travels with the first name
      } else {
        archive_entry_set_size(entry.get(), item.st.st_size);
        has_data = item.st.st_size > 0;
      }
    }
    if (archive_write_header(writer.get(), entry.get()) < ARCHIVE_WARN) {
      return Fail(LayerError(writer.get(), *sink, item.path));
    }
    if (has_data && sink->outer != nullptr) {
      SBX_TRY(CopyFileData(writer.get(), *sink, root, item, &buffer));
    }
  }
  if (archive_write_close(writer.get()) != ARCHIVE_OK) {
    return Fail(LayerError(writer.get(), *sink, "close layer writer"));
  }
  return {};
}

// The stored config with rootfs.diff_ids naming the one layer and one history entry for it.
// The old history stays, as empty layers, so `docker history` still tells where it came from.
Result<std::string> ExportConfig(std::string_view stored_config, const std::string& store_hex,
                                 const std::string& layer_hex) {
  auto parsed = ParseJsonBounded(stored_config);
  Json config = parsed ? std::move(*parsed) : Json();
  if (!config.is_object()) {
    return Fail(ErrorCode::kInternal, "the stored config of sha256:{} is not a JSON object",
                store_hex);
  }
  config["rootfs"] = {{"type", "layers"}, {"diff_ids", Json::array({Sha256Digest(layer_hex)})}};
  Json history = Json::array();
  if (auto it = config.find("history"); it != config.end() && it->is_array()) {
    for (Json item : *it) {
      if (!item.is_object()) continue;
      item["empty_layer"] = true;
      history.push_back(std::move(item));
    }
  }
  Json flattened = {
      {"created_by", "mcp-sandbox: the stored rootfs of " + Sha256Digest(store_hex)},
      {"comment", "all layers of the stored image, flattened into one for the Docker backend"}};
  if (auto it = config.find("created"); it != config.end() && it->is_string()) {
    flattened["created"] = *it;
  }
  history.push_back(std::move(flattened));
  config["history"] = std::move(history);
  return config.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status AddMemoryFile(archive* writer, const std::string& name, std::string_view content) {
  Entry entry = GeneratedFileEntry(name.c_str(), content.size());
  if (archive_write_header(writer, entry.get()) < ARCHIVE_WARN) {
    return Fail(ArchiveError(writer, name));
  }
  if (archive_write_data(writer, content.data(), content.size()) !=
      static_cast<la_ssize_t>(content.size())) {
    return Fail(ArchiveError(writer, name));
  }
  return {};
}

struct CachePaths {
  std::string archives;
  std::string base;  // archives/docker-<hex>
  std::string Tar() const { return base + ".tar"; }
  std::string Record() const { return base + ".json"; }
  std::string Lock() const { return base + ".lock"; }
};

CachePaths CacheFor(const std::string& state_dir, const std::string& hex) {
  CachePaths paths;
  paths.archives = state_dir + "/archives";
  paths.base = paths.archives + "/docker-" + hex;
  return paths;
}

// The cached archive when its record matches the image and the tar on disk.
std::optional<DockerArchive> ReadRecord(const CachePaths& paths, const StoredImage& image) {
  auto text = ReadFile(paths.Record());
  if (!text) return std::nullopt;
  auto parsed = ParseJsonBounded(*text);
  if (!parsed || !parsed->is_object()) return std::nullopt;
  const Json& record = *parsed;
  if (record.value("format", 0) != kArchiveFormat ||
      record.value("store_digest", "") != image.digest) {
    return std::nullopt;
  }
  DockerArchive archive;
  archive.path = paths.Tar();
  archive.image_id = record.value("image_id", "");
  archive.repo_tag = record.value("repo_tag", "");
  archive.size_bytes = record.value("size_bytes", uint64_t{0});
  auto hex = ParseSha256Digest(archive.image_id);
  struct stat st {};
  if (!hex || ::stat(archive.path.c_str(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) != archive.size_bytes || archive.size_bytes == 0) {
    return std::nullopt;
  }
  return archive;
}

// Removes the temp files of writes that were killed. The caller holds the image's lock, so
// no write of that image is under way.
void RemoveStaleTemps(const CachePaths& paths) {
  const std::string prefix = std::filesystem::path(paths.Tar()).filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator(paths.archives, ec)) {
    if (item.path().filename().string().rfind(prefix, 0) == 0) {
      spdlog::debug("removing {}, left by an interrupted export", item.path().string());
      std::filesystem::remove(item.path(), ec);
    }
  }
}

// Removes the archives of images the store no longer has (skipping those being written).
// Their lock files stay: a process may be waiting on one.
int RemoveOrphanArchives(const std::string& state_dir, const std::string& archives_dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator(archives_dir, ec)) {
    const std::string name = item.path().filename().string();
    // docker-<64 hex>.tar
    if (name.size() != 7 + 64 + 4 || name.rfind("docker-", 0) != 0 ||
        name.substr(7 + 64) != ".tar") {
      continue;
    }
    const std::string hex = name.substr(7, 64);
    if (!IsSha256Hex(hex)) continue;
    struct stat st {};
    if (::stat((state_dir + "/images/" + hex + "/meta.json").c_str(), &st) == 0) continue;
    CachePaths paths = CacheFor(state_dir, hex);
    auto lock = FileLock::TryExclusive(paths.Lock());
    if (!lock || !*lock) continue;
    spdlog::info("removing {}: its image is no longer in the store", paths.Tar());
    ::unlink(paths.Record().c_str());
    if (::unlink(paths.Tar().c_str()) == 0) ++removed;
    RemoveStaleTemps(paths);
  }
  return removed;
}

}  // namespace

Result<DockerArchive> WriteDockerArchive(const StoredImage& image, const std::string& path) {
  SBX_ASSIGN_OR_RETURN(std::string store_hex, ParseSha256Digest(image.digest));
  // The store keeps the config beside the tree: images/<hex>/{config.json,rootfs}.
  const std::string image_dir = std::filesystem::path(image.rootfs).parent_path().string();
  auto stored_config = ReadFile(image_dir + "/config.json");
  if (!stored_config) {
    if (stored_config.error().sys_errno == ENOENT) {
      return Fail(ErrorCode::kNotFound, "image {} is no longer in the store", image.digest);
    }
    return Fail(std::move(stored_config.error()));
  }
  SBX_ASSIGN_OR_RETURN(TreeScan scan, ScanTree(image.rootfs));
  if (scan.skipped > 0) {
    spdlog::warn("image {}: {} fifos, sockets or devices left out of the export", image.digest,
                 scan.skipped);
  }

  // The layer goes into the outer tar as it is written, so its size must be known first.
  LayerSink sizing;
  SBX_TRY(WriteLayer(image.rootfs, scan, &sizing));

  Fd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) return FailSys("open", path);
  ArchiveWriter outer(archive_write_new());
  if (!outer) return Fail(ErrorCode::kInternal, "archive_write_new failed");
  SBX_TRY(ConfigureWriter(outer.get()));
  if (archive_write_open_fd(outer.get(), out.get()) != ARCHIVE_OK) {
    return Fail(ArchiveError(outer.get(), path));
  }
  {
    Entry entry(archive_entry_new());
    archive_entry_set_pathname(entry.get(), kLayerName);
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(sizing.bytes));
    archive_entry_set_mtime(entry.get(), 0, 0);
    if (archive_write_header(outer.get(), entry.get()) < ARCHIVE_WARN) {
      return Fail(ArchiveError(outer.get(), path));
    }
  }
  LayerSink sink;
  sink.outer = outer.get();
  SBX_TRY(WriteLayer(image.rootfs, scan, &sink));
  if (sink.bytes != sizing.bytes) {
    return Fail(ErrorCode::kInternal,
                "the layer of {} has {} bytes, {} were planned (the rootfs changed under the "
                "export)",
                image.digest, sink.bytes, sizing.bytes);
  }
  const std::string layer_hex = sink.hash.FinishHex();

  // docker load reads manifest.json wherever it is in the tar, so the small documents, which
  // need the layer's digest, come after it.
  SBX_ASSIGN_OR_RETURN(std::string config, ExportConfig(*stored_config, store_hex, layer_hex));
  const std::string config_hex = Sha256Hex(config);
  DockerArchive result;
  result.path = path;
  result.image_id = Sha256Digest(config_hex);
  result.repo_tag = std::string(kRepository) + ":" + store_hex;
  Json manifest = Json::array({{{"Config", config_hex + ".json"},
                                {"RepoTags", Json::array({result.repo_tag})},
                                {"Layers", Json::array({kLayerName})}}});
  SBX_TRY(AddMemoryFile(outer.get(), config_hex + ".json", config));
  SBX_TRY(AddMemoryFile(outer.get(), "manifest.json", manifest.dump()));
  if (archive_write_close(outer.get()) != ARCHIVE_OK) {
    return Fail(ArchiveError(outer.get(), path));
  }
  if (::fsync(out.get()) != 0) return FailSys("fsync", path);
  struct stat st {};
  if (::fstat(out.get(), &st) != 0) return FailSys("fstat", path);
  result.size_bytes = static_cast<uint64_t>(st.st_size);
  return result;
}

Result<DockerArchive> EnsureDockerArchive(const std::string& state_dir, const StoredImage& image) {
  SBX_ASSIGN_OR_RETURN(std::string hex, ParseSha256Digest(image.digest));
  const CachePaths paths = CacheFor(state_dir, hex);
  struct stat st {};
  if (::stat((std::filesystem::path(image.rootfs).parent_path() / "config.json").c_str(), &st) !=
      0) {
    return Fail(ErrorCode::kNotFound, "image {} is no longer in the store", image.digest);
  }
  SBX_TRY(MakeDirs(paths.archives));
  // Checked again under the lock: of two processes, the second finds the first one's archive.
  if (auto cached = ReadRecord(paths, image)) {
    cached->reused = true;
    return *cached;
  }
  SBX_ASSIGN_OR_RETURN(FileLock lock, FileLock::Exclusive(paths.Lock()));
  if (auto cached = ReadRecord(paths, image)) {
    cached->reused = true;
    return *cached;
  }
  RemoveStaleTemps(paths);
  (void)RemoveOrphanArchives(state_dir, paths.archives);

  std::string temp = paths.Tar() + ".tmp-XXXXXX";
  Fd temp_fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (!temp_fd) return FailSys("mkostemp", temp);
  if (::fchmod(temp_fd.get(), 0644) != 0) return FailSys("fchmod", temp);
  struct TempGuard {
    std::string path;
    bool keep = false;
    ~TempGuard() {
      if (!keep) ::unlink(path.c_str());
    }
  } guard{temp};

  auto started = std::chrono::steady_clock::now();
  SBX_ASSIGN_OR_RETURN(DockerArchive archive, WriteDockerArchive(image, temp));
  if (::rename(temp.c_str(), paths.Tar().c_str()) != 0) return FailSys("rename", paths.Tar());
  guard.keep = true;
  archive.path = paths.Tar();
  Json record = {{"format", kArchiveFormat},         {"store_digest", image.digest},
                 {"image_id", archive.image_id},     {"repo_tag", archive.repo_tag},
                 {"size_bytes", archive.size_bytes}, {"written", NowRfc3339()}};
  SBX_TRY(WriteFileAtomic(paths.Record(), record.dump(2) + "\n"));
  spdlog::info("exported image {} as a docker archive ({} MiB, image id {}) in {} ms", image.digest,
               archive.size_bytes >> 20, archive.image_id,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count());
  return archive;
}

int RemoveOrphanDockerArchives(const std::string& state_dir) {
  return RemoveOrphanArchives(state_dir, state_dir + "/archives");
}

}  // namespace sandbox::rootfs
