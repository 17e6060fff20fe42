#include "runtime/cgroup/limits_plan.h"

#include <cmath>

#include <fmt/format.h>

#include "runtime/base/files.h"
#include "runtime/base/units.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox {

const char* LimitMechanismName(LimitMechanism mechanism) {
  switch (mechanism) {
    case LimitMechanism::kNone:
      return "none";
    case LimitMechanism::kCgroup2:
      return "cgroup2";
    case LimitMechanism::kCgroup1:
      return "cgroup1";
    case LimitMechanism::kRlimit:
      return "rlimit";
    case LimitMechanism::kTmpfsSize:
      return "tmpfs";
    case LimitMechanism::kDocker:
      return "docker";
    case LimitMechanism::kUserNamespace:
      return "userns";
  }
  return "none";
}

namespace cgroup {

bool HostHasSwap() {
  auto swaps = ReadFile("/proc/swaps");
  if (!swaps) return false;
  // The first line is the header; any further non-empty line is an active swap area.
  size_t newline = swaps->find('\n');
  return newline != std::string::npos &&
         swaps->find_first_not_of(" \n", newline) != std::string::npos;
}

std::string CpuText(double cpus) {
  double tenths = cpus * 10;
  if (std::fabs(tenths - std::round(tenths)) < 1e-9) return fmt::format("{:.1f} cpu", cpus);
  return fmt::format("{:.2f} cpu", cpus);
}

long CpuQuotaMicros(double cpus) {
  // The kernel refuses quotas under 1 ms (cpu.max and cpu.cfs_quota_us alike).
  return std::max(1000L, std::lround(cpus * static_cast<double>(kCpuPeriodMicros)));
}

EnforcedLimits BuildPlan(const std::string& mode, const Limits& limits,
                         const CgroupCapabilities& cgroup) {
  EnforcedLimits plan;
  plan.cgroup_mode = mode;
  auto add = [&](std::string name, LimitMechanism mechanism, std::string value, std::string note) {
    plan.limits.push_back({std::move(name), mechanism, std::move(value), std::move(note)});
  };

  if (cgroup.memory) {
    add("memory", cgroup.mechanism, FormatBytes(limits.memory_bytes), cgroup.memory_note);
  } else {
    add("memory", LimitMechanism::kRlimit, FormatBytes(limits.memory_bytes),
        "no memory cgroup: RLIMIT_AS caps each process's virtual address space (not resident "
        "memory, and every process gets the full amount)");
  }

  if (cgroup.swap) {
    add("swap", cgroup.mechanism, "0", HostHasSwap() ? "" : "this host has no swap configured");
  } else {
    add("swap", LimitMechanism::kNone, "not limited", cgroup.swap_note);
  }

  if (cgroup.cpu) {
    add("cpu", cgroup.mechanism, CpuText(limits.cpus), "");
  } else {
    add("cpu", LimitMechanism::kNone, "not limited",
        cgroup.cpu_note.empty()
            ? "no cpu cgroup: CPU time is not limited (the per-call timeout still bounds a run)"
            : cgroup.cpu_note);
  }

  std::string pids = std::to_string(limits.pids);
  if (cgroup.pids) {
    add("pids", cgroup.mechanism, pids, "");
  } else if (NprocRlimitIsPerSandbox()) {
    auto [major, minor] = KernelVersion();
    bool per_userns = major > 5 || (major == 5 && minor >= 14);
    add("pids", LimitMechanism::kRlimit, pids,
        per_userns ? "no pids cgroup: RLIMIT_NPROC, counted per user namespace (Linux >= 5.14)"
                   : "no pids cgroup: RLIMIT_NPROC on the session's own host uid");
  } else {
    add("pids", LimitMechanism::kNone, "not limited",
        "no pids cgroup, and before Linux 5.14 RLIMIT_NPROC counts every process of the "
        "server's uid");
  }

  // Sizes derived from the memory limit (runtime/limits.h): /mnt/data at most half of it.
  std::string tmpfs_note =
      cgroup.memory ? "tmpfs size; its pages count as the session's memory, and it fits in the "
                      "memory limit: full, it fails writes with ENOSPC, not with an OOM kill"
                    : "tmpfs size; its pages use host memory outside any per-sandbox memory "
                      "limit";
  add("disk", LimitMechanism::kTmpfsSize, FormatBytes(limits.disk_bytes), tmpfs_note);
  add("tmp", LimitMechanism::kTmpfsSize, FormatBytes(limits.tmp_bytes), tmpfs_note);
  add("open_files", LimitMechanism::kRlimit, std::to_string(limits.open_files), "RLIMIT_NOFILE");
  add("file_size", LimitMechanism::kRlimit, FormatBytes(limits.file_size_bytes), "RLIMIT_FSIZE");
  return plan;
}

}  // namespace cgroup
}  // namespace sandbox
