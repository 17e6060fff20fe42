// Starting `runsc run` from a reaper of its own, so that closing a gVisor sandbox waits for the
// sandbox's own processes, not for pid 1 (gvisor_backend.cc).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::gvisor {

// `runsc run` and the reaper it is started from (ForkRunsc).
struct RunscProcesses {
  pid_t reaper = -1;  // this server's child
  pid_t runsc = -1;   // the reaper's child: `runsc run`
};

// Forks a reaper that forks `runsc run`. runsc daemonizes the Sentry and the Gofer as children
// of `runsc run`, so a killed `runsc run` left them to pid 1, and `runsc delete` waited for pid
// 1 to reap them (1.1-2 s a close on this machine, whose pid 1 reaps slowly). The reaper is a
// child subreaper: they fall to it and it reaps them at once, and it exits once every process
// under it is gone, so its exit says the sandbox's processes are. It stays outside the sandbox's
// cgroup (a group kill must not end it). `runsc run` waits on `go` until the parent has moved it
// into the cgroup, so the Sentry and the Gofer are born inside it. A pipe carries its pid to the
// parent. The children: async-signal-safe calls only.
Result<RunscProcesses> ForkRunsc(const std::vector<std::string>& argv, int stream_fd, int log_fd,
                                 int go_fd, int null_fd);

}  // namespace sandbox::gvisor
