// The sandbox child, from clone to execve, as one flat list of steps (RunChild), and the plan
// it follows. The plan is built on the host before the clone (strings, mount ops, rlimits, the
// BPF program); the child only reads it: RunChild is async-signal-safe (no allocation, no
// locks, no logging, no exceptions). A failing step is reported to the parent as a
// ChildFailure {step, index, errno} on the sync socket, then the child _exits.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/ns/mounts.h"
#include "runtime/ns/userns.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::ns {

enum class ChildStep : int32_t {
  kWaitForParent,
  kUnshare,
  kMount,  // index: the MountOp
  kPivotRoot,
  kDetachOldRoot,
  kHostname,
  kLoopback,
  kRlimit,  // index: the RlimitSetting
  kSetsid,
  kSetgroups,
  kSetresgid,
  kDropBoundingSet,
  kClearAmbientSet,
  kSetresuid,
  kClearCapabilities,
  kNoNewPrivs,
  kDeathSignal,
  kWorkdir,
  kStdio,
  kCloseFds,
  kSeccomp,
  kExec,
  kJoinCgroup,  // index: the file of cgroup_join_fds
};

// The message a failing child writes on the sync socket (one SOCK_SEQPACKET datagram).
struct ChildFailure {
  int32_t step = 0;
  int32_t index = 0;
  int32_t err = 0;
};

struct ChildPlan {
  int sync_fd = -1;    // the child's end of the sync socketpair (CLOEXEC: EOF on exec)
  int stream_fd = -1;  // the child's end of the agent socketpair: becomes fds 0 and 1
  int log_fd = -1;     // write end of the log pipe: becomes fd 2 (-1: /dev/null)
  // Optional: becomes fd 3, inherited by init (the egress channel, runtime/egress/). -1: none.
  int channel_fd = -1;

  // Namespaces the child unshares itself once its ids are mapped (user and pid come from the
  // clone), so the work runs in parallel in each child instead of serially on the spawner
  // thread. Not CLONE_NEWCGROUP: the child makes that one after the parent's second go byte,
  // once it is in the sandbox's cgroup (the namespace's root is the cgroup it is made in).
  int unshare_flags = 0;
  // cgroup v1: the sandbox's `tasks` files, opened by the parent (SandboxCgroup::
  // OpenSelfJoinFiles); the child writes "0" to each, joining its cgroups by itself before
  // the parent's second go byte. Empty: the parent joins it (or the clone put it in).
  std::vector<int> cgroup_join_fds;
  MountPlan mounts;
  std::string hostname = "sandbox";
  std::string workdir = layout::kDataDir;
  std::vector<RlimitSetting> rlimits;
  // Root server: the gid map was written by a privileged process, so setgroups(2) is allowed
  // and must be used to drop the server's supplementary groups.
  bool drop_supplementary_groups = false;
  uid_t uid = kSandboxUid;
  gid_t gid = kSandboxGid;
  const sock_fprog* seccomp = nullptr;  // installed last; null only in tests that say so
  // close_range(2) with CLOSE_RANGE_CLOEXEC (5.11); false: walk /proc/self/fd instead.
  bool use_close_range = true;

  std::string exec_path;
  std::vector<std::string> argv;
  std::vector<std::string> env;

  // Builds the null-terminated pointer arrays execve needs. Call after the last change to
  // argv/env and before the clone.
  void Finalize();
  char* const* argv_ptrs() const { return const_cast<char* const*>(argv_ptrs_.data()); }
  char* const* env_ptrs() const { return const_cast<char* const*>(env_ptrs_.data()); }

 private:
  std::vector<const char*> argv_ptrs_;
  std::vector<const char*> env_ptrs_;
};

// Child side. Never returns.
[[noreturn]] void RunChild(const ChildPlan& plan);

// Host side: "mount /proc: EPERM" for a failure report of `plan`'s child.
std::string DescribeChildFailure(const ChildPlan& plan, const ChildFailure& failure);

}  // namespace sandbox::ns
