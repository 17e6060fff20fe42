// An exclusive flock(2) on a lock file, released when the object goes (closing the fd drops
// it): how the store, the docker-export cache and the image recipe keep processes that work on
// the same image from stepping on each other.
#pragma once

#include <optional>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

class FileLock {
 public:
  // Creates the lock file when missing and waits for the lock.
  static Result<FileLock> Exclusive(const std::string& path);
  // nullopt when another open file description holds it.
  static Result<std::optional<FileLock>> TryExclusive(const std::string& path);

 private:
  explicit FileLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace sandbox::rootfs
