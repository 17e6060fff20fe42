// Per-sandbox caps on the kernel's per-user counters (ucounts): inotify instances and watches,
// queued signals, POSIX message queue bytes, nested user namespaces.
//
// Since Linux 5.11-5.15 these are counted per (user namespace, uid) and charged up the chain of
// namespaces: a charge inside a sandbox's user namespace is also charged to (parent namespace,
// OWNER uid), the euid that created the namespace. So (a) the spawner creates each sandbox's
// namespace as the sandbox's own host uid when the server is root (spawn.cc), and (b) every
// sandbox gets caps of its own: the user.max_* sysctls of its namespace (written by the child,
// which holds CAP_SYS_RESOURCE there) and RLIMIT_SIGPENDING / RLIMIT_MSGQUEUE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/limits.h"
#include "runtime/ns/mounts.h"

namespace sandbox::ns {

struct KernelCounters {
  uint64_t inotify_instances = 0;  // user.max_inotify_instances
  uint64_t inotify_watches = 0;    // user.max_inotify_watches
  uint64_t fanotify_groups = 0;    // user.max_fanotify_groups
  uint64_t fanotify_marks = 0;     // user.max_fanotify_marks
  uint64_t sigpending = 0;         // RLIMIT_SIGPENDING (queued signals)
  uint64_t msgqueue_bytes = 0;     // RLIMIT_MSGQUEUE
};

// What one host uid may use: the server's own namespace's user.max_* values and the server's
// RLIMIT_SIGPENDING / RLIMIT_MSGQUEUE (soft). Missing files read as 0 (no such counter).
KernelCounters HostPerUserBudget();

// The caps of one sandbox. `own_host_uid`: the sandbox is charged to a host uid of its own (root
// server), which has the whole per-user budget to itself: the caps are that budget. Otherwise
// (an ordinary-user server) every sandbox is charged to the server's user, next to the user's
// own desktop session: each gets at most half the budget divided by `max_sessions`, so all
// sandboxes together leave the user at least half, with a floor that keeps a sandbox usable
// (kMinSandbox*: with many sessions the floor may exceed the share).
inline constexpr uint64_t kMinSandboxInotifyInstances = 8;
inline constexpr uint64_t kMinSandboxInotifyWatches = 1024;
inline constexpr uint64_t kMinSandboxFanotifyGroups = 1;
inline constexpr uint64_t kMinSandboxFanotifyMarks = 1024;
inline constexpr uint64_t kMinSandboxSigpending = 64;
inline constexpr uint64_t kMinSandboxMsgqueueBytes = 16 << 10;
KernelCounters SandboxCaps(const KernelCounters& host, bool own_host_uid, int max_sessions);

// The user.max_* writes for `caps`, and max_user_namespaces=0 (nesting is refused by seccomp
// too; the counter is defence in depth). Counters reading 0 on the host (absent) are skipped.
std::vector<UserSysctl> SandboxSysctls(const KernelCounters& caps);
// RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE for the child.
std::vector<RlimitSetting> SandboxCounterRlimits(const KernelCounters& caps);
// The caps as limits in force, for status and doctor.
void DescribeCaps(const KernelCounters& caps, bool own_host_uid, EnforcedLimits& out);

}  // namespace sandbox::ns
