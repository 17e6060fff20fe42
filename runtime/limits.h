// Resource limits: what a session asks for (Limits) and what the host actually enforces for
// it (EnforcedLimits). Enforcement is never silently weaker: EnforcedLimits says what holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace sandbox {

// /mnt/data and /tmp are tmpfs mounts, and tmpfs pages are charged to the sandbox's memory
// cgroup (there is no swap for them to go to: memory.swap.max is 0). A tmpfs larger than what
// the memory limit leaves free cannot be filled: the writer is OOM-killed instead of getting
// ENOSPC. So the sizes are derived from the memory limit: /mnt/data at most half of it, /tmp a
// quarter, leaving at least a quarter for the processes. As `docker run --memory` refuses an
// incoherent --memory-swap rather than bending it, an explicit disk limit above the maximum is
// refused (tools/cli/config.cc, SessionManager), never silently shrunk.
inline constexpr uint64_t kDefaultMemoryBytes = 512ull << 20;
inline constexpr uint64_t kMaxDefaultDataBytes = 1ull << 30;  // the default never exceeds 1 GiB
inline constexpr uint64_t kMaxTmpBytes = 256ull << 20;
// The largest /mnt/data a memory limit can hold.
constexpr uint64_t MaxDataBytes(uint64_t memory_bytes) { return memory_bytes / 2; }
// SANDBOX_DISK_LIMIT when not set.
constexpr uint64_t DefaultDataBytes(uint64_t memory_bytes) {
  return std::min(kMaxDefaultDataBytes, MaxDataBytes(memory_bytes));
}
// The size of /tmp for a memory limit.
constexpr uint64_t TmpBytesFor(uint64_t memory_bytes) {
  return std::min(kMaxTmpBytes, memory_bytes / 4);
}

struct Limits {
  uint64_t memory_bytes = kDefaultMemoryBytes;  // SANDBOX_MEMORY_LIMIT
  double cpus = 1.0;                            // SANDBOX_CPU_LIMIT (CPU time per wall second)
  uint32_t pids = 256;                          // SANDBOX_PIDS_LIMIT
  // SANDBOX_DISK_LIMIT: size of the /mnt/data tmpfs
  uint64_t disk_bytes = DefaultDataBytes(kDefaultMemoryBytes);
  uint64_t tmp_bytes = TmpBytesFor(kDefaultMemoryBytes);  // size of the /tmp tmpfs
  uint32_t open_files = 1024;                             // RLIMIT_NOFILE
  uint64_t file_size_bytes = 1ull << 30;                  // RLIMIT_FSIZE
};

// How a limit is enforced for one sandbox.
// kUserNamespace: a user.max_* counter set inside the sandbox's own user namespace.
enum class LimitMechanism {
  kNone,
  kCgroup2,
  kCgroup1,
  kRlimit,
  kTmpfsSize,
  kDocker,
  kUserNamespace
};
const char* LimitMechanismName(LimitMechanism mechanism);

struct EnforcedLimit {
  std::string name;  // "memory", "swap", "cpu", "pids", "disk", "tmp", "open_files", "file_size"
  LimitMechanism mechanism = LimitMechanism::kNone;
  std::string value;  // human form of the value in force, e.g. "512MiB", "1.0 cpu", "256"
  std::string note;   // why weaker or absent, e.g. "no delegated cgroup: RLIMIT_AS only"
};

struct EnforcedLimits {
  std::string cgroup_mode;  // "cgroup2", "cgroup1", "none" (rlimits only), "docker"
  // Why this mechanism: CgroupManager::reason(), which for rlimits only names what failed and
  // the one command that would give real limits.
  std::string reason;
  std::vector<EnforcedLimit> limits;
};

}  // namespace sandbox
