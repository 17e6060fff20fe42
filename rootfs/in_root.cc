#include "rootfs/in_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string_view>
#include <vector>

namespace sandbox::rootfs {

Result<Fd> OpenInRoot(int root_fd, const std::string& path, int flags, mode_t mode,
                      Confinement confinement) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  if (confinement == Confinement::kTree) how.resolve |= RESOLVE_NO_XDEV;
  const char* name = path.empty() ? "." : path.c_str();
  // EAGAIN: RESOLVE_IN_ROOT refuses to resolve ".." while a rename races it; retrying is what
  // openat2(2) recommends. Nothing else renames inside a tree being unpacked.
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, root_fd, name, &how, sizeof how);
    if (fd >= 0) return Fd(static_cast<int>(fd));
    if ((errno == EAGAIN && attempt < 8) || errno == EINTR) continue;
    return FailSys("openat2", path);
  }
}

namespace {

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

}  // namespace

Result<std::vector<std::string>> ListDirAt(int dir_fd) {
  // fdopendir takes the fd it is given, and readdir moves its offset: work on a duplicate.
  int dup_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return FailSys("fcntl(F_DUPFD_CLOEXEC)");
  std::unique_ptr<DIR, DirCloser> dir(::fdopendir(dup_fd));
  if (!dir) {
    int err = errno;
    ::close(dup_fd);
    return FailSys("fdopendir", "", err);
  }
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    dirent* entry = ::readdir(dir.get());
    if (entry == nullptr) break;
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (errno != 0) return FailSys("readdir");
  return names;
}

namespace {

Status RemoveChildren(int dir_fd, uint64_t* freed_bytes) {
  SBX_ASSIGN_OR_RETURN(auto names, ListDirAt(dir_fd));
  for (const auto& name : names) SBX_TRY(RemoveTreeAt(dir_fd, name, freed_bytes));
  return {};
}

}  // namespace

Status RemoveTreeAt(int dir_fd, const std::string& name, uint64_t* freed_bytes) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return FailSys("fstatat", name);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir_fd, name.c_str(), 0) != 0) {
      if (errno == ENOENT) return {};
      return FailSys("unlinkat", name);
    }
    if (freed_bytes != nullptr && S_ISREG(st.st_mode) && st.st_nlink == 1) {
      *freed_bytes += static_cast<uint64_t>(st.st_size);
    }
    return {};
  }
  {
    Fd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child && errno == EACCES) {
      // A directory we may not read (an image's 0111 dir, as a non-root user): make it ours.
      if (::fchmodat(dir_fd, name.c_str(), 0700, AT_SYMLINK_NOFOLLOW) != 0) {
        return FailSys("fchmodat", name);
      }
      child.Reset(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!child) return FailSys("openat", name);
    // Unlinking entries needs write and search permission on the directory (0555 in images).
    if ((st.st_mode & S_IRWXU) != S_IRWXU && ::fchmod(child.get(), 0700) != 0) {
      return FailSys("fchmod", name);
    }
    if (auto status = RemoveChildren(child.get(), freed_bytes); !status) {
      return Fail(std::move(status.error()).Context(name));
    }
  }
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return FailSys("rmdir", name);
  }
  return {};
}

Result<std::string> FdPath(int fd) {
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  char buf[PATH_MAX];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n < 0) return FailSys("readlink", link);
  if (static_cast<size_t>(n) >= sizeof buf) {
    return Fail(ErrorCode::kInternal, "readlink({}): path too long", link);
  }
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace sandbox::rootfs
