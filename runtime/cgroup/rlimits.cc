// The rlimits every sandbox gets, whatever cgroup mode is in force.
#include <sys/resource.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox {

const char* RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_AS:
      return "RLIMIT_AS";
    case RLIMIT_CORE:
      return "RLIMIT_CORE";
    case RLIMIT_CPU:
      return "RLIMIT_CPU";
    case RLIMIT_DATA:
      return "RLIMIT_DATA";
    case RLIMIT_FSIZE:
      return "RLIMIT_FSIZE";
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE";
    case RLIMIT_NPROC:
      return "RLIMIT_NPROC";
    case RLIMIT_STACK:
      return "RLIMIT_STACK";
    case RLIMIT_SIGPENDING:
      return "RLIMIT_SIGPENDING";
    case RLIMIT_MSGQUEUE:
      return "RLIMIT_MSGQUEUE";
    default:
      return nullptr;
  }
}

bool NprocRlimitIsPerSandbox() {
  // Linux 5.14 ("Reimplement RLIMIT_NPROC on top of ucounts", 21d1c5e386bc) counts processes
  // per (user namespace, uid) and checks each level against the limit in force there, so a
  // limit set inside a sandbox's own user namespace counts that sandbox's tasks only. Before,
  // the count was per host uid: only safe when each session has its own host uid, which is
  // what a root server gives it (DESIGN.md, isolation baseline).
  auto [major, minor] = cgroup::KernelVersion();
  bool per_userns = major > 5 || (major == 5 && minor >= 14);
  return per_userns || ::geteuid() == 0;
}

std::vector<RlimitSetting> RlimitsFor(const Limits& limits, bool memory_cgroup_in_force) {
  std::vector<RlimitSetting> settings;
  settings.push_back({RLIMIT_CORE, 0, 0});
  settings.push_back({RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes});
  settings.push_back({RLIMIT_NOFILE, limits.open_files, limits.open_files});
  if (NprocRlimitIsPerSandbox()) {
    // Counts tasks (threads too), like pids.max. Not enforced for host uid 0, which a sandbox
    // never runs as.
    settings.push_back({RLIMIT_NPROC, limits.pids, limits.pids});
  }
  if (!memory_cgroup_in_force) {
    // Virtual address space, per process: weaker than a memory cgroup (no shared total, and
    // reservations count: glibc arenas and thread stacks), but it stops one runaway process.
    settings.push_back({RLIMIT_AS, limits.memory_bytes, limits.memory_bytes});
  }
  return settings;
}

}  // namespace sandbox
