// What a sandbox's processes use, read from /proc, for hosts without a cgroup to ask
// (rlimits-only mode). Host side.
#pragma once

#include <sys/types.h>

#include "runtime/backend.h"

namespace sandbox::ns {

// Sums over `init` and its descendants (found through /proc/<pid>/task/<tid>/children):
// resident memory, process count, and CPU time (their own plus what init has reaped).
// memory_peak_bytes and oom_kills stay 0: /proc cannot tell them for the group.
SandboxUsage ProcessTreeUsage(pid_t init);

}  // namespace sandbox::ns
