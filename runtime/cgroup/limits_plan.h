// The report of what is enforced (EnforcedLimits) for each cgroup mode, and the rlimits that
// back it up. Pure data in, data out: unit-tested without privileges.
#pragma once

#include <string>

#include "runtime/limits.h"

namespace sandbox::cgroup {

// What the cgroup side of a mode can enforce; BuildPlan adds the tmpfs sizes and rlimits.
struct CgroupCapabilities {
  LimitMechanism mechanism = LimitMechanism::kNone;  // kCgroup2, kCgroup1 or kNone
  bool memory = false;
  bool swap = false;  // swap limited to 0 (memory.swap.max / memory.memsw.limit_in_bytes)
  bool cpu = false;
  bool pids = false;
  std::string memory_note;  // a caveat of the memory limit or its OOM count
  std::string swap_note;    // why swap is not limited (when !swap)
  std::string cpu_note;     // why cpu is not limited (when !cpu)
};

EnforcedLimits BuildPlan(const std::string& mode, const Limits& limits,
                         const CgroupCapabilities& cgroup);

// True when the host has an active swap area (/proc/swaps lists one).
bool HostHasSwap();

// "1.0 cpu" style text for a cpu limit.
std::string CpuText(double cpus);

// The cpu.max / cpu.cfs_quota_us quota for `cpus` against a 100 ms period (at least 1 ms).
long CpuQuotaMicros(double cpus);
inline constexpr long kCpuPeriodMicros = 100000;

}  // namespace sandbox::cgroup
