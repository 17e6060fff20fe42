// A container's resource usage read straight from its cgroup on this host. The cgroup is found
// from the container's init pid (State.Pid) through /proc/<pid>/cgroup and /proc/self/mountinfo,
// and must name the container id (so a recycled pid is never read). A few file reads: fast
// enough to call around every run, unlike GET /containers/{id}/stats, which samples for about a
// second; and exact about OOM kills (memory.oom_control / memory.events "oom_kill"), which the
// daemon's "oom" events only report asynchronously. Unavailable when the daemon runs in another
// pid namespace or machine: the backend then falls back to the Engine API.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/backend.h"
#include "runtime/base/result.h"

namespace sandbox::docker {

struct ContainerCgroupPaths {
  bool v2 = false;
  std::string memory;  // the container's group in the memory hierarchy (v2: the one group)
  std::string pids;
  std::string cpu;  // cpuacct on v1
  // The group of the cpu controller on v1 (cpu.shares; often the cpuacct one, "cpu,cpuacct"),
  // "" when not mounted; the one group on v2 (cpu.weight).
  std::string cpu_control;
};

// The container's share of contended CPU as the kernel holds it: v1 cpu.shares or v2 cpu.weight.
struct ContainerCpuWeight {
  std::string file;  // "cpu.shares" or "cpu.weight"
  uint64_t value = 0;
};

// Pure: resolves the groups from the text of /proc/<pid>/cgroup and /proc/self/mountinfo.
// nullopt when the memory group is not found or does not name `container_id`.
std::optional<ContainerCgroupPaths> ResolveContainerCgroup(std::string_view proc_cgroup,
                                                           std::string_view mountinfo,
                                                           std::string_view container_id);

// Reads /proc/<pid>/cgroup and /proc/self/mountinfo, then resolves (kNotFound when it cannot).
Result<ContainerCgroupPaths> FindContainerCgroup(pid_t pid, std::string_view container_id);

// Current usage; fields whose files are missing stay 0.
SandboxUsage ReadContainerUsage(const ContainerCgroupPaths& paths);
// The cpu.shares (v1) or cpu.weight (v2) in force; kNotFound without a cpu controller.
Result<ContainerCpuWeight> ReadContainerCpuWeight(const ContainerCgroupPaths& paths);
// Writes cpu.shares on v1, where the value is the daemon's own (HostConfig.CpuShares, no
// conversion): a raise takes effect at once, before the daemon's update lands. kNotFound on
// v2 (runc converts shares to cpu.weight by a formula of its version).
Status WriteContainerCpuShares(const ContainerCgroupPaths& paths, int64_t shares);
// ReadContainerUsage(paths).oom_kills alone.
uint64_t ReadContainerOomKills(const ContainerCgroupPaths& paths);

}  // namespace sandbox::docker
