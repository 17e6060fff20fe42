// User namespace ids (host side): who the sandbox user (uid/gid 1000 inside) is on the host,
// and the uid_map/gid_map writes that make it so.
//
// Unprivileged server: a single-id map onto the server's own uid/gid, setgroups "deny"
// (user_namespaces(7): the only map an unprivileged writer may set).
// Root server: a dedicated unprivileged host id per session, so two sessions are different
// users on the host and cannot signal or ptrace each other even outside their namespaces.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::ns {

inline constexpr uid_t kSandboxUid = layout::kSandboxUid;
inline constexpr gid_t kSandboxGid = layout::kSandboxGid;

struct IdMapping {
  uid_t inside_uid = kSandboxUid;
  uid_t host_uid = 0;
  gid_t inside_gid = kSandboxGid;
  gid_t host_gid = 0;
  // Unprivileged writers must deny setgroups(2) before writing gid_map; a privileged writer
  // leaves it allowed so the child can drop the server's supplementary groups.
  bool deny_setgroups = true;
};

// The "inside host count" line of a map file.
std::string IdMapLine(uint32_t inside, uint32_t host);

// Writes /proc/<pid>/setgroups (when denying), uid_map and gid_map. Host side, called by the
// parent while the child waits. Fails naming the file and errno.
Status WriteIdMappings(pid_t pid, const IdMapping& mapping);

// Root server only: hands out host ids kHostIdBase + slot, one per live sandbox, unique on
// this host. A claim is a file <claim_dir>/<id> created with O_EXCL (atomic across threads
// and processes, including other servers using other state dirs) holding the claimer's
// "pid starttime session_id"; it is removed when the sandbox is gone. The directory is under
// /run by default, so claims vanish at reboot together with the processes they guard.
class HostIdAllocator {
 public:
  static constexpr uint32_t kHostIdBase = 0x10000000;
  static constexpr uint32_t kHostIdCount = 65536;

  explicit HostIdAllocator(std::string claim_dir);
  const std::string& claim_dir() const { return claim_dir_; }

  // Claims a free id for `session_id`.
  Result<uint32_t> Claim(const std::string& session_id);
  void Release(uint32_t host_id);

  struct StaleClaim {
    uint32_t host_id;
    std::string session_id;
  };
  // Claims whose owning server process (pid + start time) is gone.
  std::vector<StaleClaim> StaleClaims() const;

 private:
  std::string claim_dir_;
  std::mutex mutex_;
  uint32_t next_slot_ = 0;  // where the next search starts (round robin: ids are reused late)
};

}  // namespace sandbox::ns
