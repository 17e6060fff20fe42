// The behaviour every cgroup mode must show, run against cgroup v1 on the host and cgroup v2
// in the VM: memory past the limit is OOM-killed and counted, fork past pids.max fails with
// EAGAIN, KillAll empties the group, Destroy removes it, SweepOrphans removes a stale group.
#pragma once

#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::testing {

void CheckMemoryLimitKills(CgroupManager& manager);
void CheckPidsLimit(CgroupManager& manager);
void CheckKillAllAndDestroy(CgroupManager& manager);
void CheckSweepOrphans(CgroupManager& manager);
// Creates and destroys `rounds` empty groups; prints and returns the mean in microseconds.
double MeasureCreateDestroy(CgroupManager& manager, int rounds);

}  // namespace sandbox::testing
