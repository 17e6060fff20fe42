#include "runtime/agent/init/disk_use.h"

#include <linux/magic.h>
#include <sys/statfs.h>

namespace sandbox::agent {

std::optional<uint64_t> TmpfsUsedBytes(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0 || fs.f_type != TMPFS_MAGIC) return std::nullopt;
  return static_cast<uint64_t>(fs.f_blocks - fs.f_bfree) * static_cast<uint64_t>(fs.f_bsize);
}

}  // namespace sandbox::agent
