#include "runtime/agent/init/disk_use.h"

#include <linux/magic.h>
#include <sys/statfs.h>

namespace sandbox::agent {

std::optional<uint64_t> TmpfsUsedBytes(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0 || fs.f_type != TMPFS_MAGIC) return std::nullopt;
  return static_cast<uint64_t>(fs.f_blocks - fs.f_bfree) * static_cast<uint64_t>(fs.f_bsize);
}

nlohmann::json DiskUseJson(const std::string& data_dir, const std::string& tmp_dir) {
  nlohmann::json disk = nlohmann::json::object();
  if (auto bytes = TmpfsUsedBytes(data_dir)) disk["data_bytes"] = *bytes;
  if (auto bytes = TmpfsUsedBytes(tmp_dir)) disk["tmp_bytes"] = *bytes;
  return disk;
}

}  // namespace sandbox::agent
