// Resource limits: what a session asks for (Limits) and what the host actually enforces for
// it (EnforcedLimits). Enforcement is never silently weaker: EnforcedLimits says what holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandbox {

struct Limits {
  uint64_t memory_bytes = 512ull << 20;   // SANDBOX_MEMORY_LIMIT
  double cpus = 1.0;                      // SANDBOX_CPU_LIMIT (CPU time per wall second)
  uint32_t pids = 256;                    // SANDBOX_PIDS_LIMIT
  uint64_t disk_bytes = 1ull << 30;       // SANDBOX_DISK_LIMIT: size of the /mnt/data tmpfs
  uint64_t tmp_bytes = 256ull << 20;      // size of the /tmp tmpfs
  uint32_t open_files = 1024;             // RLIMIT_NOFILE
  uint64_t file_size_bytes = 1ull << 30;  // RLIMIT_FSIZE
};

// How a limit is enforced for one sandbox.
enum class LimitMechanism { kNone, kCgroup2, kCgroup1, kRlimit, kTmpfsSize, kDocker };
const char* LimitMechanismName(LimitMechanism mechanism);

struct EnforcedLimit {
  std::string name;  // "memory", "swap", "cpu", "pids", "disk", "tmp", "open_files", "file_size"
  LimitMechanism mechanism = LimitMechanism::kNone;
  std::string value;  // human form of the value in force, e.g. "512MiB", "1.0 cpu", "256"
  std::string note;   // why weaker or absent, e.g. "no delegated cgroup: RLIMIT_AS only"
};

struct EnforcedLimits {
  std::string cgroup_mode;  // "cgroup2", "cgroup1", "none" (rlimits only), "docker"
  std::vector<EnforcedLimit> limits;
};

}  // namespace sandbox
