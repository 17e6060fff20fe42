// pidfd_open(2) and pidfd_send_signal(2) as raw syscalls: glibc 2.36's <sys/pidfd.h> lacks
// extern "C", so its declarations do not link from C++. Async-signal-safe.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace sandbox::ns {

// A pidfd (always close-on-exec) for `pid`, or -1 with errno.
inline int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Sends `sig` to the process behind `pidfd`; 0 or -1 with errno (ESRCH: it has exited).
inline int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace sandbox::ns
