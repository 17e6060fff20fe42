#include "runtime/agent/init/data_snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace sandbox::agent {

namespace {

constexpr int kMaxDepth = 32;

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

void DataSnapshot::Walk(int dir_fd, const std::string& prefix, int depth, size_t max_entries) {
  DIR* dir = ::fdopendir(dir_fd);  // takes ownership of dir_fd
  if (dir == nullptr) {
    ::close(dir_fd);
    return;
  }
  while (dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (visited_ >= max_entries) {
      truncated_ = true;
      break;
    }
    ++visited_;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string path = prefix + "/" + name;
    if (S_ISREG(st.st_mode)) {
      files_.emplace(std::move(path), FileStamp{static_cast<uint64_t>(st.st_size),
                                                Nanos(st.st_mtim), Nanos(st.st_ctim), st.st_ino});
    } else if (S_ISDIR(st.st_mode) && depth < kMaxDepth && std::strcmp(name, "__pycache__") != 0) {
      int child = ::openat(::dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) Walk(child, path, depth + 1, max_entries);
    }
    if (truncated_) break;  // the cap ends the whole walk, not only this directory
  }
  ::closedir(dir);
}

DataSnapshot DataSnapshot::Take(const std::string& root, size_t max_entries) {
  DataSnapshot snapshot;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) snapshot.Walk(fd, root, 0, max_entries);
  return snapshot;
}

std::vector<ChangedFile> DataSnapshot::ChangedIn(const DataSnapshot& after) const {
  std::vector<ChangedFile> changed;
  for (const auto& [path, stamp] : after.files_) {
    auto before = files_.find(path);
    if (before != files_.end() && before->second == stamp) continue;
    changed.push_back(ChangedFile{path, stamp.size, stamp.mtime_ns / 1000000});
  }
  std::sort(changed.begin(), changed.end(),
            [](const ChangedFile& a, const ChangedFile& b) { return a.path < b.path; });
  return changed;
}

}  // namespace sandbox::agent
