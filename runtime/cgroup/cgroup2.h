// cgroup v2: finding a hierarchy we may use (root, or a subtree delegated to our uid), preparing
// the parent group with +memory +pids +cpu, and one group per sandbox (memory.max,
// memory.swap.max, pids.max, cpu.max; cgroup.kill; OOM count from memory.events).
// Runs in the server process. Kernel reference: Documentation/admin-guide/cgroup-v2.rst.
#pragma once

#include <memory>
#include <string>

#include "runtime/base/result.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::cgroup {

// The leaf a server moves itself to inside its delegated cgroup, so controllers can be enabled
// there (cgroup v2 "no internal processes").
inline constexpr const char* kServerLeaf = "server";

// What preparing the v2 hierarchy found; the input of the v2 manager.
struct Cgroup2Setup {
  std::string mount;       // "/sys/fs/cgroup"
  std::string parent;      // the directory session groups are created in: <base>/<owner>
  bool delegated = false;  // an unprivileged delegated subtree rather than root's
  bool cpu = false;        // the cpu controller is enabled for the session groups
  bool swap = false;       // memory.swap.max exists (swap accounting is on)
  std::string moved_to;    // when we moved ourselves to a leaf: its path, for the reason text
  std::string owner;       // the parent group's name (CgroupOwnerFor)
  // The transient scope the user's systemd manager made for us (runtime/cgroup/systemd_scope.h),
  // when that is where the delegated cgroup came from; its sweep also stops stale sibling scopes.
  std::string systemd_scope;
};

// Finds the v2 hierarchy and prepares `<base>/<owner>` with the memory and pids controllers
// (cpu when available) enabled for its children. Fails with a reason naming what is missing
// (no cgroup2 mount, no controllers, not root and not delegated, EBUSY from other processes).
Result<Cgroup2Setup> PrepareCgroup2(const std::string& owner);

// The manager for a prepared hierarchy.
std::unique_ptr<CgroupManager> MakeCgroup2Manager(Cgroup2Setup setup, std::string reason);

}  // namespace sandbox::cgroup
