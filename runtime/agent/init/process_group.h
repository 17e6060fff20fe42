// Stopping what a run left behind in its process group (sandbox-init).
#pragma once

#include <sys/types.h>

namespace sandbox::agent {

// SIGKILLs every process of process group `pgid` except `keep`, found by scanning /proc (the
// sandbox's own: init is pid 1 of its pid namespace, so this sees exactly the sandbox). Passes
// repeat until one finds nobody, so a child forked during a pass is caught by the next; bounded,
// because a member that cannot be killed must not hang init. Returns how many were signalled.
int KillGroupExcept(pid_t pgid, pid_t keep);

}  // namespace sandbox::agent
