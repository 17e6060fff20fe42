#include "runtime/ns/proc_masks.h"

#include <sys/mount.h>

#include <string>

namespace sandbox::ns {

const std::vector<std::string_view>& MaskedProcPaths() {
  // interrupts: GHSA-6fw5-f8r9-fgfm; kcore: physical memory; keys: the kernel keyrings;
  // timer_list, sched_debug, latency_stats: host scheduling and task details.
  static const std::vector<std::string_view> paths = {
      "/proc/acpi",       "/proc/asound",        "/proc/interrupts",  "/proc/kcore",
      "/proc/keys",       "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi",
      "/proc/timer_list", "/proc/timer_stats",
  };
  return paths;
}

const std::vector<std::string_view>& ReadOnlyProcPaths() {
  static const std::vector<std::string_view> paths = {
      "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
  };
  return paths;
}

void AppendProcMounts(MountPlan& plan, const std::vector<UserSysctl>& sysctls) {
  auto& ops = plan.ops;
  ops.push_back(MountFsOp("proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "", "mount /proc"));
  for (const UserSysctl& sysctl : sysctls) {
    ops.push_back(WriteFileOp(sysctl.path, sysctl.value, "set /" + sysctl.path));
  }
  for (std::string_view path : MaskedProcPaths()) {
    ops.push_back(MaskPathOp(std::string(path.substr(1)), "mask " + std::string(path)));
  }
  for (std::string_view path : ReadOnlyProcPaths()) {
    ops.push_back(
        ReadOnlyPathOp(std::string(path.substr(1)), "make " + std::string(path) + " read-only"));
  }
}

}  // namespace sandbox::ns
