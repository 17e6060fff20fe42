#include "seccomp/policy_spec.h"

#include <linux/netlink.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

namespace sandbox::seccomp {
namespace {

// An int argument compared the way the kernel reads it: only the low 32 bits count. Userspace
// can put anything in the upper half of the register; a 64-bit compare would then miss.
ArgCondition Int32Eq(unsigned index, uint64_t value) {
  return ArgCondition{index, Cmp::kMaskedEq, 0xffffffffULL, value};
}

// socket(2)'s type argument also carries SOCK_NONBLOCK and SOCK_CLOEXEC; the type is the low
// nibble (SOCK_TYPE_MASK in include/linux/net.h).
constexpr uint64_t kSockTypeMask = 0xf;

// Every namespace-creating clone flag. CLONE_NEWTIME (0x80) shares its bit with the exit-signal
// byte of clone(2), whose valid values are below 65, so no legitimate clone(2) sets it.
constexpr uint64_t kCloneNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                          CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET | CLONE_NEWTIME;
static_assert(kCloneNamespaceFlags == 0x7E020080, "Docker's mask 0x7E020000 plus CLONE_NEWTIME");

SyscallRule Allow(std::vector<std::string> names, std::string why) {
  return SyscallRule{std::move(names), Action::kAllow, 0, {}, std::move(why)};
}

SyscallRule AllowIf(std::string name, std::vector<ArgCondition> args, std::string why) {
  return SyscallRule{{std::move(name)}, Action::kAllow, 0, std::move(args), std::move(why)};
}

SyscallRule Refuse(std::vector<std::string> names, int err, std::string why) {
  return SyscallRule{std::move(names), Action::kErrno, err, {}, std::move(why)};
}

SyscallRule RefuseIf(std::string name, std::vector<ArgCondition> args, int err, std::string why) {
  return SyscallRule{{std::move(name)}, Action::kErrno, err, std::move(args), std::move(why)};
}

PolicySpec BuildSandboxPolicy() {
  PolicySpec spec;
  spec.default_errno = EPERM;
  spec.unknown_errno = ENOSYS;
  // Reviewed against the x86_64 table through futex_requeue (456, Linux 6.7), which is also the
  // last name Debian 12's libseccomp knows. 457+ (statmount, listmount, lsm_*, mseal, *xattrat,
  // ...) answer ENOSYS until someone reviews them and moves this bound.
  spec.reviewed_through_nr = 456;
  // x86_64 never assigned 335..423: rseq is 334, pidfd_send_signal 424 (the numbers between
  // were left free when the tables of all architectures were aligned in Linux 5.1).
  spec.unassigned = {{335, 423}};

  std::vector<SyscallRule>& r = spec.rules;

  // Docker's default allowlist (moby/profiles rule 0), restricted to x86_64 names, without the
  // calls refused below and without socketpair (narrowed below); plus arch_prctl (Docker's
  // amd64-only rule), which glibc needs to set up thread-local storage.
  r.push_back(
      Allow({"accept",
             "accept4",
             "access",
             "alarm",
             "arch_prctl",
             "bind",
             "brk",
             "cachestat",
             "capget",
             "capset",
             "chdir",
             "chmod",
             "chown",
             "clock_getres",
             "clock_gettime",
             "clock_nanosleep",
             "close",
             "close_range",
             "connect",
             "copy_file_range",
             "creat",
             "dup",
             "dup2",
             "dup3",
             "epoll_create",
             "epoll_create1",
             "epoll_ctl",
             "epoll_ctl_old",
             "epoll_pwait",
             "epoll_pwait2",
             "epoll_wait",
             "epoll_wait_old",
             "eventfd",
             "eventfd2",
             "execve",
             "execveat",
             "exit",
             "exit_group",
             "faccessat",
             "faccessat2",
             "fadvise64",
             "fallocate",
             "fanotify_mark",
             "fchdir",
             "fchmod",
             "fchmodat",
             "fchmodat2",
             "fchown",
             "fchownat",
             "fcntl",
             "fdatasync",
             "fgetxattr",
             "flistxattr",
             "flock",
             "fork",
             "fremovexattr",
             "fsetxattr",
             "fstat",
             "fstatfs",
             "fsync",
             "ftruncate",
             "futex",
             "futex_requeue",
             "futex_wait",
             "futex_waitv",
             "futex_wake",
             "futimesat",
             "get_robust_list",
             "get_thread_area",
             "getcpu",
             "getcwd",
             "getdents",
             "getdents64",
             "getegid",
             "geteuid",
             "getgid",
             "getgroups",
             "getitimer",
             "getpeername",
             "getpgid",
             "getpgrp",
             "getpid",
             "getppid",
             "getpriority",
             "getrandom",
             "getresgid",
             "getresuid",
             "getrlimit",
             "getrusage",
             "getsid",
             "getsockname",
             "getsockopt",
             "gettid",
             "gettimeofday",
             "getuid",
             "getxattr",
             "inotify_add_watch",
             "inotify_init",
             "inotify_init1",
             "inotify_rm_watch",
             "io_cancel",
             "io_destroy",
             "io_getevents",
             "io_pgetevents",
             "io_setup",
             "io_submit",
             "ioctl",
             "ioprio_get",
             "ioprio_set",
             "kill",
             "landlock_add_rule",
             "landlock_create_ruleset",
             "landlock_restrict_self",
             "lchown",
             "lgetxattr",
             "link",
             "linkat",
             "listen",
             "listxattr",
             "llistxattr",
             "lremovexattr",
             "lseek",
             "lsetxattr",
             "lstat",
             "madvise",
             "map_shadow_stack",
             "membarrier",
             "memfd_create",
             "mincore",
             "mkdir",
             "mkdirat",
             "mknod",
             "mknodat",
             "mlock",
             "mlock2",
             "mlockall",
             "mmap",
             "mprotect",
             "mq_getsetattr",
             "mq_notify",
             "mq_open",
             "mq_timedreceive",
             "mq_timedsend",
             "mq_unlink",
             "mremap",
             "msgctl",
             "msgget",
             "msgrcv",
             "msgsnd",
             "msync",
             "munlock",
             "munlockall",
             "munmap",
             "nanosleep",
             "newfstatat",
             "open",
             "openat",
             "openat2",
             "pause",
             "pidfd_open",
             "pidfd_send_signal",
             "pipe",
             "pipe2",
             "pkey_alloc",
             "pkey_free",
             "pkey_mprotect",
             "poll",
             "ppoll",
             "prctl",
             "pread64",
             "preadv",
             "preadv2",
             "prlimit64",
             "process_mrelease",
             "pselect6",
             "pwrite64",
             "pwritev",
             "pwritev2",
             "read",
             "readahead",
             "readlink",
             "readlinkat",
             "readv",
             "recvfrom",
             "recvmmsg",
             "recvmsg",
             "remap_file_pages",
             "removexattr",
             "rename",
             "renameat",
             "renameat2",
             "restart_syscall",
             "rmdir",
             "rseq",
             "rt_sigaction",
             "rt_sigpending",
             "rt_sigprocmask",
             "rt_sigqueueinfo",
             "rt_sigreturn",
             "rt_sigsuspend",
             "rt_sigtimedwait",
             "rt_tgsigqueueinfo",
             "sched_get_priority_max",
             "sched_get_priority_min",
             "sched_getaffinity",
             "sched_getattr",
             "sched_getparam",
             "sched_getscheduler",
             "sched_rr_get_interval",
             "sched_setaffinity",
             "sched_setattr",
             "sched_setparam",
             "sched_setscheduler",
             "sched_yield",
             "seccomp",
             "select",
             "semctl",
             "semget",
             "semop",
             "semtimedop",
             "sendfile",
             "sendmmsg",
             "sendmsg",
             "sendto",
             "set_robust_list",
             "set_thread_area",
             "set_tid_address",
             "setfsgid",
             "setfsuid",
             "setgid",
             "setgroups",
             "setitimer",
             "setpgid",
             "setpriority",
             "setregid",
             "setresgid",
             "setresuid",
             "setreuid",
             "setrlimit",
             "setsid",
             "setsockopt",
             "setuid",
             "setxattr",
             "shmat",
             "shmctl",
             "shmdt",
             "shmget",
             "shutdown",
             "sigaltstack",
             "signalfd",
             "signalfd4",
             "splice",
             "stat",
             "statfs",
             "statx",
             "symlink",
             "symlinkat",
             "sync",
             "sync_file_range",
             "syncfs",
             "sysinfo",
             "tee",
             "tgkill",
             "time",
             "timer_create",
             "timer_delete",
             "timer_getoverrun",
             "timer_gettime",
             "timer_settime",
             "timerfd_create",
             "timerfd_gettime",
             "timerfd_settime",
             "times",
             "tkill",
             "truncate",
             "umask",
             "uname",
             "unlink",
             "unlinkat",
             "utime",
             "utimensat",
             "utimes",
             "vfork",
             "vmsplice",
             "wait4",
             "waitid",
             "write",
             "writev"},
            "the baseline every Linux program (and CPython, numpy, pandas, matplotlib) relies on"));

  // --- allowed for some arguments only (anything else: default_errno) ---

  r.push_back(AllowIf("clone", {{0, Cmp::kMaskedEq, kCloneNamespaceFlags, 0}},
                      "fork and threads, but no new namespaces"));

  // Families: AF_UNIX any type; AF_INET/AF_INET6 as TCP, UDP and ICMP "ping" sockets only
  // (no SOCK_RAW/SOCK_PACKET, and no protocol whose module the kernel would autoload from inside
  // the sandbox: SCTP, DCCP, L2TP, ... each had exploitable bugs); AF_NETLINK with NETLINK_ROUTE
  // only (getaddrinfo and getifaddrs use it). Everything else gets default_errno (EPERM): it is
  // what Docker answers, it says "refused by policy" rather than pretending the kernel lacks the
  // family (EAFNOSUPPORT), and "every family except these" cannot be written as one errno rule
  // in either libseccomp or Docker's format without listing every family number.
  r.push_back(AllowIf("socket", {Int32Eq(0, AF_UNIX)}, "unix sockets (multiprocessing, ...)"));
  for (uint64_t family : {AF_INET, AF_INET6}) {
    const uint64_t icmp = family == AF_INET ? uint64_t{IPPROTO_ICMP} : uint64_t{IPPROTO_ICMPV6};
    const std::pair<uint64_t, uint64_t> allowed[] = {{SOCK_STREAM, 0},
                                                     {SOCK_STREAM, IPPROTO_TCP},
                                                     {SOCK_DGRAM, 0},
                                                     {SOCK_DGRAM, IPPROTO_UDP},
                                                     {SOCK_DGRAM, icmp}};
    for (auto [type, protocol] : allowed) {
      r.push_back(AllowIf(
          "socket",
          {Int32Eq(0, family), {1, Cmp::kMaskedEq, kSockTypeMask, type}, Int32Eq(2, protocol)},
          "TCP, UDP and ping sockets"));
    }
  }
  r.push_back(AllowIf("socket", {Int32Eq(0, AF_NETLINK), Int32Eq(2, NETLINK_ROUTE)},
                      "rtnetlink for getaddrinfo/getifaddrs; no other netlink protocol"));
  r.push_back(AllowIf("socketpair", {Int32Eq(0, AF_UNIX)}, "socketpair exists only for AF_UNIX"));

  // personality(2): the harmless personas Docker allows, and the query (0xffffffff). Notably not
  // ADDR_NO_RANDOMIZE, which would switch ASLR off for what the sandbox executes next.
  for (uint64_t persona : {uint64_t{PER_LINUX}, uint64_t{PER_LINUX32}, uint64_t{UNAME26},
                           uint64_t{UNAME26} | uint64_t{PER_LINUX32}, uint64_t{0xffffffff}}) {
    r.push_back(AllowIf("personality", {Int32Eq(0, persona)}, "query or harmless personas"));
  }

  // --- refused although otherwise allowed: checked before the allowlist ---

  // TIOCSTI pushes bytes into a terminal's input queue (keystroke injection into whoever owns
  // the tty, CVE-2016-7545 class); TIOCLINUX can do the same on a VT (selection paste);
  // TIOCSETD switches a tty's line discipline, the entry point of n_hdlc/n_gsm exploits
  // (CVE-2017-2636, CVE-2023-6546). The request is an unsigned int: compare 32 bits.
  for (uint64_t request : {uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}, uint64_t{TIOCSETD}}) {
    r.push_back(RefuseIf("ioctl", {Int32Eq(1, request)}, EPERM,
                         "terminal input injection and line-discipline switching"));
  }

  // --- refused: ENOSYS so that callers fall back ---

  r.push_back(Refuse({"clone3"}, ENOSYS,
                     "its flags live in memory seccomp cannot read; glibc falls back to clone(2), "
                     "which is checked above"));

  // --- refused: EPERM (listed so the policy says why; default_errno would answer the same) ---

  r.push_back(Refuse(
      {"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise"},
      EPERM, "reading or steering another process"));
  r.push_back(Refuse({"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
                      "io_uring_register", "lookup_dcookie", "fanotify_init"},
                     EPERM,
                     "large kernel attack surface (bpf verifier, perf, userfaultfd race "
                     "widening, io_uring bypassing seccomp)"));
  r.push_back(
      Refuse({"keyctl", "add_key", "request_key"}, EPERM, "kernel keyrings are not namespaced"));
  r.push_back(Refuse({"mount", "umount2", "mount_setattr", "move_mount", "open_tree", "fsopen",
                      "fsconfig", "fsmount", "fspick", "pivot_root", "chroot", "unshare", "setns",
                      "name_to_handle_at", "open_by_handle_at", "quotactl", "quotactl_fd"},
                     EPERM,
                     "mounts, namespaces, root changes and handle-based opens (the 'shocker' "
                     "escape) stay with the runtime"));
  r.push_back(
      Refuse({"kexec_load",    "kexec_file_load", "reboot",        "swapon",      "swapoff",
              "init_module",   "finit_module",    "delete_module", "acct",        "settimeofday",
              "clock_settime", "adjtimex",        "clock_adjtime", "sethostname", "setdomainname",
              "iopl",          "ioperm",          "syslog",        "vhangup",     "modify_ldt"},
             EPERM, "host administration and raw hardware access"));
  r.push_back(Refuse({"memfd_secret"}, EPERM,
                     "memory hidden from the kernel's own direct map; nothing here needs it"));
  r.push_back(Refuse({"mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node",
                      "migrate_pages", "move_pages"},
                     EPERM,
                     "NUMA placement: numpy and OpenBLAS do not need it (libnuma treats the "
                     "error as 'no NUMA', as under Docker, which gates these on CAP_SYS_NICE)"));
  r.push_back(Refuse(
      {"_sysctl", "uselib", "ustat", "sysfs", "nfsservctl", "create_module", "get_kernel_syms",
       "query_module", "afs_syscall", "tuxcall", "security", "vserver", "getpmsg", "putpmsg"},
      EPERM, "obsolete or never implemented on x86_64"));
  return spec;
}

bool IsPrintableName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

const PolicySpec& SandboxPolicy() {
  static const PolicySpec policy = BuildSandboxPolicy();
  return policy;
}

Status ValidatePolicySpec(const PolicySpec& spec) {
  auto valid_errno = [](int err) { return err > 0 && err <= 4095; };  // SECCOMP_RET_DATA, MAX_ERRNO
  if (!valid_errno(spec.default_errno) || !valid_errno(spec.unknown_errno)) {
    return Fail(ErrorCode::kInvalidArgument, "default errno {} / unknown errno {} out of 1..4095",
                spec.default_errno, spec.unknown_errno);
  }
  uint32_t previous_end = 0;
  for (const SyscallRange& range : spec.unassigned) {
    if (range.first > range.last || range.first < previous_end ||
        range.last > spec.reviewed_through_nr) {
      return Fail(ErrorCode::kInvalidArgument,
                  "unassigned range {}..{} must be ordered, disjoint and within 0..{}", range.first,
                  range.last, spec.reviewed_through_nr);
    }
    previous_end = range.last + 1;
  }

  // name -> the action of its unconditional rule, if any.
  std::map<std::string, const SyscallRule*> unconditional;
  for (const SyscallRule& rule : spec.rules) {
    if (rule.names.empty()) return Fail(ErrorCode::kInvalidArgument, "a rule without names");
    if (rule.action == Action::kErrno && !valid_errno(rule.errno_value)) {
      return Fail(ErrorCode::kInvalidArgument, "rule for {}: errno {} out of 1..4095",
                  rule.names.front(), rule.errno_value);
    }
    std::set<unsigned> indexes;
    for (const ArgCondition& arg : rule.args) {
      if (arg.index > 5) {
        return Fail(ErrorCode::kInvalidArgument, "rule for {}: argument index {} (max 5)",
                    rule.names.front(), arg.index);
      }
      if (!indexes.insert(arg.index).second) {
        return Fail(ErrorCode::kInvalidArgument,
                    "rule for {}: two tests of argument {} in one rule (libseccomp cannot AND "
                    "them; Docker would OR them)",
                    rule.names.front(), arg.index);
      }
    }
    for (const std::string& name : rule.names) {
      if (!IsPrintableName(name)) {
        return Fail(ErrorCode::kInvalidArgument, "bad syscall name '{}'", name);
      }
      if (!rule.args.empty()) continue;
      auto [it, inserted] = unconditional.emplace(name, &rule);
      if (!inserted) {
        return Fail(ErrorCode::kInvalidArgument, "{} has two unconditional rules", name);
      }
    }
  }
  // A conditional rule next to an unconditional one must do something the unconditional one
  // does not: refuse some arguments of an allowed call (ioctl). Anything else is dead or
  // contradictory.
  for (const SyscallRule& rule : spec.rules) {
    if (rule.args.empty()) continue;
    for (const std::string& name : rule.names) {
      auto it = unconditional.find(name);
      if (it == unconditional.end()) continue;
      if (it->second->action != Action::kAllow || rule.action != Action::kErrno) {
        return Fail(ErrorCode::kInvalidArgument,
                    "{}: a conditional rule that the unconditional one makes dead", name);
      }
    }
  }
  return {};
}

std::vector<std::string> UnconditionallyAllowed(const PolicySpec& spec) {
  std::vector<std::string> names;
  for (const SyscallRule& rule : spec.rules) {
    if (rule.action == Action::kAllow && rule.args.empty()) {
      names.insert(names.end(), rule.names.begin(), rule.names.end());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> ConditionallyAllowed(const PolicySpec& spec) {
  const std::vector<std::string> always = UnconditionallyAllowed(spec);
  std::set<std::string> names;
  for (const SyscallRule& rule : spec.rules) {
    if (rule.action != Action::kAllow || rule.args.empty()) continue;
    for (const std::string& name : rule.names) {
      if (!std::binary_search(always.begin(), always.end(), name)) names.insert(name);
    }
  }
  return {names.begin(), names.end()};
}

std::string_view CmpName(Cmp op) {
  switch (op) {
    case Cmp::kEq:
      return "SCMP_CMP_EQ";
    case Cmp::kNe:
      return "SCMP_CMP_NE";
    case Cmp::kLt:
      return "SCMP_CMP_LT";
    case Cmp::kLe:
      return "SCMP_CMP_LE";
    case Cmp::kGt:
      return "SCMP_CMP_GT";
    case Cmp::kGe:
      return "SCMP_CMP_GE";
    case Cmp::kMaskedEq:
      return "SCMP_CMP_MASKED_EQ";
  }
  return "SCMP_CMP_INVALID";
}

std::string_view ActionName(Action action) {
  return action == Action::kAllow ? "SCMP_ACT_ALLOW" : "SCMP_ACT_ERRNO";
}

}  // namespace sandbox::seccomp
