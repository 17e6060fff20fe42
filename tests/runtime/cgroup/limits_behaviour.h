// The behaviour every cgroup mode must show, run against cgroup v1 on the host and cgroup v2
// in the VM: memory past the limit is OOM-killed and counted, fork past pids.max fails with
// EAGAIN, KillAll empties the group, Destroy removes it, SweepOrphans removes a stale group, a
// background group yields the CPU.
#pragma once

#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::testing {

void CheckMemoryLimitKills(CgroupManager& manager);
void CheckPidsLimit(CgroupManager& manager);
void CheckKillAllAndDestroy(CgroupManager& manager);
void CheckSweepOrphans(CgroupManager& manager);
// Two busy groups on one CPU: one at CpuPriority::kBackground gets a small fraction of the
// other's CPU time, and about as much once raised back to kNormal.
void CheckBackgroundCpuPriority(CgroupManager& manager);
// Creates and destroys `rounds` empty groups; prints and returns the mean in microseconds.
double MeasureCreateDestroy(CgroupManager& manager, int rounds);

}  // namespace sandbox::testing
