// Stopping what a run left behind in its process group (sandbox-init).
#pragma once

#include <sys/types.h>

#include <vector>

namespace sandbox::agent {

// SIGKILLs every process of process group `pgid` except `keep`, found by scanning /proc (the
// sandbox's own: init is pid 1 of its pid namespace, so this sees exactly the sandbox). Passes
// repeat until one finds nobody alive, so a child forked during a pass is caught by the next,
// even under a pid it reused (gVisor reuses freed pids at once); bounded,
// because a member that cannot be killed must not hang init. Returns how many were signalled,
// and their pids in `killed` when given.
int KillGroupExcept(pid_t pgid, pid_t keep, std::vector<pid_t>* killed = nullptr);

}  // namespace sandbox::agent
