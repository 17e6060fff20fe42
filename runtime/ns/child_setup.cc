#include "runtime/ns/child_setup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/base/result.h"
#include "runtime/ns/caps.h"
#include "runtime/ns/netns.h"
#include "seccomp/install.h"

namespace sandbox::ns {

void ChildPlan::Finalize() {
  argv_ptrs_.clear();
  for (const std::string& arg : argv) argv_ptrs_.push_back(arg.c_str());
  argv_ptrs_.push_back(nullptr);
  env_ptrs_.clear();
  for (const std::string& var : env) env_ptrs_.push_back(var.c_str());
  env_ptrs_.push_back(nullptr);
}

namespace {

[[noreturn]] void Report(const ChildPlan& plan, ChildStep step, int index, int err) {
  ChildFailure failure{static_cast<int32_t>(step), index, err};
  // Best effort: if the parent is gone there is nobody to tell.
  (void)!::write(plan.sync_fd, &failure, sizeof failure);
  ::_exit(127);
}

void Check(const ChildPlan& plan, ChildStep step, int rc) {
  if (rc != 0) Report(plan, step, 0, errno);
}

// Signal dispositions set to "ignore" survive execve; the server may ignore SIGPIPE. Blocked
// signals survive too. The sandbox starts from the defaults.
void ResetSignals() {
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    (void)::sigaction(sig, &action, nullptr);  // glibc's internal signals answer EINVAL
  }
  sigset_t none;
  ::sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Marks every fd >= 3 close-on-exec. close_range(2) with CLOSE_RANGE_CLOEXEC (5.11); older
// kernels get a walk of /proc/self/fd with raw getdents64 (opendir would allocate).
int MarkFdsCloseOnExec(bool use_close_range) {
  if (use_close_range) {
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
    if (errno != ENOSYS && errno != EINVAL) return errno;
  }
  int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno;
  alignas(8) char buf[4096];
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n < 0) {
      int err = errno;
      ::close(dir);
      return err;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      auto* entry = reinterpret_cast<struct dirent64*>(buf + off);
      off += entry->d_reclen;
      int fd = 0;
      const char* p = entry->d_name;
      if (*p < '0' || *p > '9') continue;
      for (; *p >= '0' && *p <= '9'; ++p) fd = fd * 10 + (*p - '0');
      if (fd >= 3 && fd != dir) (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  ::close(dir);
  return 0;
}

// Reads the parent's next go byte. EOF: the parent gave up on us.
void WaitForParent(const ChildPlan& plan) {
  char go = 0;
  for (;;) {
    ssize_t n = ::read(plan.sync_fd, &go, 1);
    if (n == 1) return;
    if (n == 0) ::_exit(1);
    if (errno != EINTR) Report(plan, ChildStep::kWaitForParent, 0, errno);
  }
}

// The parent (the server) is gone if its end of the sync socket is closed.
bool ParentGone(int sync_fd) {
  struct pollfd pfd = {sync_fd, POLLRDHUP, 0};
  int n = ::poll(&pfd, 1, 0);
  return n > 0 && (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

}  // namespace

void RunChild(const ChildPlan& plan) {
  // Dies with the spawner thread (the parent of record for PDEATHSIG); set again after the
  // uid change, which clears it.
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  ResetSignals();
  ::umask(022);

  // Phase 1: wait until the parent has written our uid/gid maps.
  WaitForParent(plan);

  Check(plan, ChildStep::kUnshare, ::unshare(plan.unshare_flags));

  const auto& ops = plan.mounts.ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    int err = ApplyMountOp(ops[i], plan.mounts.use_mount_setattr);
    if (err != 0) Report(plan, ChildStep::kMount, static_cast<int>(i), err);
  }

  // The cwd is the rootfs mount (the plan chdir'd into it). pivot_root(".", ".") stacks the
  // old root on top of the new one; unmounting "." then detaches it (pivot_root(2) NOTES).
  Check(plan, ChildStep::kPivotRoot, static_cast<int>(::syscall(SYS_pivot_root, ".", ".")));
  Check(plan, ChildStep::kDetachOldRoot, ::umount2(".", MNT_DETACH));
  Check(plan, ChildStep::kPivotRoot, ::chdir("/"));

  Check(plan, ChildStep::kHostname, ::sethostname(plan.hostname.data(), plan.hostname.size()));
  if (int err = BringUpLoopback(); err != 0) Report(plan, ChildStep::kLoopback, 0, err);

  // Phase 2: join our cgroups (cgroup v1: "0" moves the writing thread, and a thread that moves
  // itself skips the global lock whose writer waits for an RCU grace period; the files were
  // opened by the parent, whose credentials the kernel checks), or wait until the parent has
  // joined us. The cgroup namespace is made after, so its root is the sandbox's cgroup; and
  // while we still have CAP_SYS_ADMIN in our user namespace.
  for (size_t i = 0; i < plan.cgroup_join_fds.size(); ++i) {
    if (::write(plan.cgroup_join_fds[i], "0", 1) != 1) {
      Report(plan, ChildStep::kJoinCgroup, static_cast<int>(i), errno);
    }
  }
  WaitForParent(plan);
  Check(plan, ChildStep::kUnshare, ::unshare(CLONE_NEWCGROUP));

  // fds 0 and 1: the agent stream; 2: the log pipe (or /dev/null). Moved above 2 first so
  // that none of them is overwritten by another's dup2. Before the rlimits: the child holds a
  // copy of every descriptor of the server (hundreds of sessions' worth), and with the
  // sandbox's RLIMIT_NOFILE (1024) in force F_DUPFD finds no free slot below it (EMFILE).
  int stream = ::fcntl(plan.stream_fd, F_DUPFD_CLOEXEC, 3);
  if (stream < 0) Report(plan, ChildStep::kStdio, 0, errno);
  int log = plan.log_fd >= 0 ? ::fcntl(plan.log_fd, F_DUPFD_CLOEXEC, 3)
                             : ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (log < 0) Report(plan, ChildStep::kStdio, 1, errno);
  int channel = plan.channel_fd >= 0 ? ::fcntl(plan.channel_fd, F_DUPFD_CLOEXEC, 3) : -1;
  if (plan.channel_fd >= 0 && channel < 0) Report(plan, ChildStep::kStdio, 3, errno);
  if (::dup2(stream, 0) < 0 || ::dup2(stream, 1) < 0 || ::dup2(log, 2) < 0) {
    Report(plan, ChildStep::kStdio, 2, errno);
  }
  if (int err = MarkFdsCloseOnExec(plan.use_close_range); err != 0)
    Report(plan, ChildStep::kCloseFds, 0, err);
  // The channel, if any, as fd 3 and inherited. dup2 onto itself would keep CLOEXEC.
  if (channel == 3) {
    if (::fcntl(3, F_SETFD, 0) != 0) Report(plan, ChildStep::kStdio, 4, errno);
  } else if (channel >= 0 && ::dup2(channel, 3) < 0) {
    Report(plan, ChildStep::kStdio, 4, errno);
  }

  for (size_t i = 0; i < plan.rlimits.size(); ++i) {
    const RlimitSetting& limit = plan.rlimits[i];
    struct rlimit value = {limit.soft, limit.hard};
    if (::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value) != 0) {
      Report(plan, ChildStep::kRlimit, static_cast<int>(i), errno);
    }
  }

  // A new session: no controlling terminal to push keystrokes into (TIOCSTI).
  if (::setsid() < 0) Report(plan, ChildStep::kSetsid, 0, errno);

  // Raw syscalls, not glibc's setgroups/setresgid/setresuid: in a multithreaded process glibc
  // applies those to every thread it knows of (the "setxid" broadcast, nptl-signals(7)), and
  // after a raw clone the child's copy of that thread list names the server's threads, which
  // it does not have: the broadcast can wait forever on a futex. The kernel call changes the
  // calling thread, which is all the child is.
  if (plan.drop_supplementary_groups) {
    Check(plan, ChildStep::kSetgroups, static_cast<int>(::syscall(SYS_setgroups, 0, nullptr)));
  }
  Check(plan, ChildStep::kSetresgid,
        static_cast<int>(::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid)));
  if (int err = DropBoundingSet(); err != 0) Report(plan, ChildStep::kDropBoundingSet, 0, err);
  if (int err = ClearAmbientSet(); err != 0) Report(plan, ChildStep::kClearAmbientSet, 0, err);
  Check(plan, ChildStep::kSetresuid,
        static_cast<int>(::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid)));
  if (int err = ClearCapabilitySets(); err != 0) {
    Report(plan, ChildStep::kClearCapabilities, 0, err);
  }
  Check(plan, ChildStep::kNoNewPrivs, ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  Check(plan, ChildStep::kDeathSignal, ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
  // getppid() is 0 in a new pid namespace; the sync socket tells whether the parent died
  // before the death signal was armed again.
  if (ParentGone(plan.sync_fd)) ::_exit(1);

  // As the sandbox user: the workdir must be reachable by it.
  Check(plan, ChildStep::kWorkdir, ::chdir(plan.workdir.c_str()));

  // Last: from here on only what the policy allows (execve, write for the report, exit).
  if (plan.seccomp != nullptr) {
    if (int err = seccomp::InstallFilterRaw(plan.seccomp); err != 0) {
      Report(plan, ChildStep::kSeccomp, 0, err);
    }
  }
  ::execve(plan.exec_path.c_str(), plan.argv_ptrs(), plan.env_ptrs());
  Report(plan, ChildStep::kExec, 0, errno);
}

// ------------------------------------------------------------------------------ host side

namespace {

const char* StepName(ChildStep step) {
  switch (step) {
    case ChildStep::kWaitForParent:
      return "wait for the parent";
    case ChildStep::kUnshare:
      return "unshare namespaces";
    case ChildStep::kMount:
      return "mount";
    case ChildStep::kPivotRoot:
      return "pivot_root";
    case ChildStep::kDetachOldRoot:
      return "detach the old root";
    case ChildStep::kHostname:
      return "sethostname";
    case ChildStep::kLoopback:
      return "bring up lo";
    case ChildStep::kRlimit:
      return "setrlimit";
    case ChildStep::kSetsid:
      return "setsid";
    case ChildStep::kSetgroups:
      return "setgroups";
    case ChildStep::kSetresgid:
      return "setresgid";
    case ChildStep::kDropBoundingSet:
      return "drop the capability bounding set";
    case ChildStep::kClearAmbientSet:
      return "clear ambient capabilities";
    case ChildStep::kSetresuid:
      return "setresuid";
    case ChildStep::kClearCapabilities:
      return "clear capabilities";
    case ChildStep::kNoNewPrivs:
      return "set no_new_privs";
    case ChildStep::kDeathSignal:
      return "set the parent-death signal";
    case ChildStep::kWorkdir:
      return "chdir to the workdir";
    case ChildStep::kStdio:
      return "set up fds 0-2";
    case ChildStep::kCloseFds:
      return "mark fds close-on-exec";
    case ChildStep::kSeccomp:
      return "install the seccomp filter";
    case ChildStep::kExec:
      return "execve";
    case ChildStep::kJoinCgroup:
      return "join the cgroup (write tasks)";
  }
  return "unknown step";
}

}  // namespace

std::string DescribeChildFailure(const ChildPlan& plan, const ChildFailure& failure) {
  auto step = static_cast<ChildStep>(failure.step);
  auto index = static_cast<size_t>(failure.index);
  std::string what;
  if (step == ChildStep::kMount && index < plan.mounts.ops.size()) {
    what = plan.mounts.ops[index].what;
  } else if (step == ChildStep::kRlimit && index < plan.rlimits.size()) {
    const char* name = RlimitName(plan.rlimits[index].resource);
    what = fmt::format("setrlimit {}", name != nullptr ? name : "an rlimit");
  } else if (step == ChildStep::kExec) {
    what = "execve " + plan.exec_path;
  } else if (step == ChildStep::kWorkdir) {
    what = "chdir " + plan.workdir;
  } else {
    what = StepName(step);
  }
  return fmt::format("{}: {}", what, ErrnoName(failure.err));
}

}  // namespace sandbox::ns
