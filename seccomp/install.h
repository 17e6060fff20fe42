// Loading a compiled filter into the calling thread.
//
// CHILD-SIDE: InstallFilterRaw is meant for the sandbox child between clone() and execve(). It
// is async-signal-safe: one raw syscall (two on kernels before 3.17), no allocation, no locks,
// no logging; it reports failure as an errno value for the caller to write() to its sync pipe.
//
// The caller's job, in this order, right before exec (seccomp is installed last):
//   1. prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0). Without it, and without CAP_SYS_ADMIN, the
//      kernel refuses the filter with EACCES (seccomp(2)); with it, no setuid/file-capability
//      exec can escape the filter.
//   2. Get the program in the parent, BEFORE clone: CompiledPolicy() (policy.h) compiles on
//      first use and allocates; in the child only pass prog() along.
//   3. InstallFilterRaw(program->prog()).
// The child is single-threaded, so no SECCOMP_FILTER_FLAG_TSYNC is needed: the filter applies
// to the calling thread and is inherited by every thread and process it creates.
#pragma once

#include <linux/filter.h>

#include "runtime/base/result.h"
#include "seccomp/policy.h"

namespace sandbox::seccomp {

// Installs `prog` on the calling thread: seccomp(SECCOMP_SET_MODE_FILTER, 0, prog), falling
// back to prctl(PR_SET_SECCOMP) where the seccomp syscall does not exist. Returns 0 or the errno
// (EACCES: no_new_privs not set; EINVAL: bad program; EFAULT: bad pointer).
// Async-signal-safe.
int InstallFilterRaw(const sock_fprog* prog) noexcept;

// The same for in-process use outside a clone child (e.g. a single-threaded helper about to
// exec): with SECCOMP_FILTER_FLAG_TSYNC, so every thread of the process is filtered or none is.
// The success path does not allocate; the failure path builds an Error (allocates), so between
// clone and exec use InstallFilterRaw.
Status InstallCompiledPolicy(const BpfProgram& program);

}  // namespace sandbox::seccomp
