// Runs in: sandbox-init. What the data directory held before a run, so that files new or changed
// by the run can be reported as artifacts afterwards.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sandbox::agent {

struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  ino_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

struct ChangedFile {
  std::string path;  // absolute
  uint64_t size = 0;
  int64_t mtime_ms = 0;
};

// Regular files under a directory, keyed by absolute path. Symlinks are not followed, and
// __pycache__ directories are skipped (bytecode of a module the user imported is not an artifact).
class DataSnapshot {
 public:
  // Every entry a walk may visit: files, directories, symlinks and the rest all count, so a tree
  // of millions of empty directories costs no more than one of files.
  static constexpr size_t kMaxEntries = 100000;

  // Walks `root` (depth and entries visited are bounded, so a huge tree costs a bounded time);
  // the walk stops at the `max_entries`-th entry.
  static DataSnapshot Take(const std::string& root, size_t max_entries = kMaxEntries);

  // Files in `after` that are not in this snapshot or whose stamp differs, sorted by path.
  std::vector<ChangedFile> ChangedIn(const DataSnapshot& after) const;

  size_t size() const { return files_.size(); }
  // Entries the walk looked at (at most max_entries), and whether it stopped at that cap.
  size_t visited() const { return visited_; }
  bool truncated() const { return truncated_; }

 private:
  void Walk(int dir_fd, const std::string& prefix, int depth, size_t max_entries);

  std::unordered_map<std::string, FileStamp> files_;
  size_t visited_ = 0;
  bool truncated_ = false;
};

}  // namespace sandbox::agent
