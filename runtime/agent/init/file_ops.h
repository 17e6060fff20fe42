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

#include "runtime/base/fd.h"
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

// One chunk of a file read at an offset (read_file), with what identifies the file, so a reader
// that takes several chunks can tell the file was replaced between them.
struct FileChunk {
  std::string content;
  uint64_t size = 0;  // the file's size when this chunk was read (0 for /proc files)
  bool eof = false;   // nothing follows this chunk
  uint64_t device = 0;
  uint64_t inode = 0;
};

// A file being written in chunks (write_open, write_chunk, write_commit). Until Commit() the
// content is in a temp file next to the name (overwrite) or in the new file itself (no
// overwrite: the name was taken with O_EXCL); Abort() and the destructor remove it, so a write
// that fails or is abandoned leaves nothing behind.
class PendingWrite {
 public:
  PendingWrite(Fd parent, Fd file, std::string temp_name, std::string name, std::string absolute,
               uint32_t mode);
  PendingWrite(PendingWrite&&) = default;
  PendingWrite& operator=(PendingWrite&&) = delete;
  ~PendingWrite() { Abort(); }

  // kUploadTooLarge when the filesystem is full. A failed append aborts the write.
  Status Append(std::string_view data);
  // Sets the mode and (overwrite) renames the temp file over the name. A failure aborts.
  Status Commit();
  void Abort();
  uint64_t written() const { return written_; }

 private:
  Fd parent_;
  Fd file_;
  std::string temp_name_;  // the name the content is written under until Commit()
  std::string name_;       // the final name, in parent_
  std::string absolute_;   // for messages
  uint32_t mode_;
  uint64_t written_ = 0;
  bool open_ = true;  // neither committed nor aborted
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
  // The first step of Write: checks the path, creates the parents and the file (or its temp
  // file). Errors as for Write.
  Result<PendingWrite> BeginWrite(std::string_view path, bool overwrite, uint32_t mode) const;
  // kNotFound; kInvalidPath for a directory or a non-regular file; kArtifactTooLarge above
  // max_bytes.
  Result<std::string> Read(std::string_view path, uint64_t max_bytes) const;
  // Up to `length` bytes at `offset`. Errors as for Read, judged from the file's size before
  // anything is read (and again from what was read, for files that grow or report size 0).
  Result<FileChunk> ReadChunk(std::string_view path, uint64_t offset, size_t length,
                              uint64_t max_bytes) const;
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
