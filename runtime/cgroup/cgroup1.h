// cgroup v1 (root only, on v1 or hybrid hosts): one group per sandbox in each of the memory,
// pids, cpu, cpuacct and freezer hierarchies that are mounted. memory.limit_in_bytes and
// memory.memsw.limit_in_bytes, pids.max, cpu.cfs_quota_us; OOM kills from memory.oom_control;
// teardown freezes, kills and thaws (v1 has no cgroup.kill). Runs in the server process.
// Kernel reference: Documentation/admin-guide/cgroup-v1/{memory,pids,freezer-subsystem}.rst.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::cgroup {

// One v1 hierarchy we use, and the parent group made in it.
struct Cgroup1Hierarchy {
  std::string parent;                    // <mount>/<owner>
  std::vector<std::string> controllers;  // what is mounted there ("cpu", "cpuacct", ...)
  bool Has(const std::string& controller) const;
};

struct Cgroup1Setup {
  std::vector<Cgroup1Hierarchy> hierarchies;  // memory first, each mount once
  bool memsw = false;     // memory.memsw.limit_in_bytes exists: swap can be limited
  bool oom_kill = false;  // memory.oom_control reports oom_kill (Linux >= 4.13)
};

// Requires root and a mounted v1 memory controller; creates `<mount>/<owner>` in each
// hierarchy used. Fails with a reason otherwise.
Result<Cgroup1Setup> PrepareCgroup1(const std::string& owner);

std::unique_ptr<CgroupManager> MakeCgroup1Manager(Cgroup1Setup setup, std::string reason);

}  // namespace sandbox::cgroup
