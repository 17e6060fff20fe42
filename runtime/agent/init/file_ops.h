// Runs in: sandbox-init. The file operations of the agent protocol (write_file, read_file, stat,
// list). Paths are absolute or relative to the data dir. Writes stay under the data dir and the
// tmp dir, also through symlinks: the parent is resolved beneath its root (openat2
// RESOLVE_BENEATH, or a symlink-refusing walk where openat2 is unavailable), and the file itself
// is created relative to that directory fd. Reads may look anywhere the sandbox user can: the
// sandbox, not this code, is the boundary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::agent {

struct FileEntry {
  std::string path;  // absolute
  uint64_t size = 0;
  int64_t mtime_ms = 0;
  bool is_dir = false;
};

struct Listing {
  std::vector<FileEntry> entries;  // sorted by path
  bool truncated = false;          // more than max_entries existed
};

class FileOps {
 public:
  // Both directories absolute and free of symlinks (init passes their realpath).
  FileOps(std::string data_dir, std::string tmp_dir);

  // The absolute, lexically normalized form of `path` ("a/../b" under the data dir -> ".../b").
  // kInvalidPath for NUL bytes or overlong paths.
  Result<std::string> Normalize(std::string_view path) const;

  // Creates parent directories as needed. kFileExists when !overwrite and the name exists;
  // kInvalidPath outside the data and tmp dirs, through an escaping symlink, or onto a directory;
  // kUploadTooLarge when the filesystem is full. An overwrite replaces the file atomically.
  Status Write(std::string_view path, std::string_view content, bool overwrite,
               uint32_t mode) const;
  // kNotFound; kInvalidPath for a directory or a non-regular file; kArtifactTooLarge above
  // max_bytes.
  Result<std::string> Read(std::string_view path, uint64_t max_bytes) const;
  Result<FileEntry> Stat(std::string_view path) const;
  // The entries of a directory (recursively if asked; symlinked directories are not entered), or
  // the one entry of a file.
  Result<Listing> List(std::string_view path, bool recursive, size_t max_entries) const;

  const std::string& data_dir() const { return data_dir_; }
  const std::string& tmp_dir() const { return tmp_dir_; }

 private:
  std::string data_dir_;
  std::string tmp_dir_;
};

}  // namespace sandbox::agent
