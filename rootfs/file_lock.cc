#include "rootfs/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

namespace sandbox::rootfs {
namespace {

Result<Fd> OpenLockFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return FailSys("open", path);
  return fd;
}

}  // namespace

Result<FileLock> FileLock::Exclusive(const std::string& path) {
  SBX_ASSIGN_OR_RETURN(Fd fd, OpenLockFile(path));
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return FailSys("flock", path);
  }
  return FileLock(std::move(fd));
}

Result<std::optional<FileLock>> FileLock::TryExclusive(const std::string& path) {
  SBX_ASSIGN_OR_RETURN(Fd fd, OpenLockFile(path));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::optional<FileLock>();
    return FailSys("flock", path);
  }
  return std::optional<FileLock>(FileLock(std::move(fd)));
}

}  // namespace sandbox::rootfs
