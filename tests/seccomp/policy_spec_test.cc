// The policy as data: what DESIGN.md promises is in it, and the table was reviewed completely.
#include "seccomp/policy_spec.h"

#include <linux/sched.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "seccomp/compile.h"

namespace sandbox::seccomp::policy_spec_test {
namespace {

// Every rule naming `name`.
std::vector<const SyscallRule*> RulesFor(const PolicySpec& spec, const std::string& name) {
  std::vector<const SyscallRule*> rules;
  for (const SyscallRule& rule : spec.rules) {
    if (std::find(rule.names.begin(), rule.names.end(), name) != rule.names.end()) {
      rules.push_back(&rule);
    }
  }
  return rules;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_CASE("the sandbox policy is structurally valid", "[unit]") {
  const Status valid = ValidatePolicySpec(SandboxPolicy());
  INFO((valid ? std::string() : valid.error().message));
  REQUIRE(valid);
  CHECK(SandboxPolicy().default_errno == EPERM);
  CHECK(SandboxPolicy().unknown_errno == ENOSYS);
}

TEST_CASE("every policy name is an x86_64 syscall inside the reviewed table", "[unit]") {
  const PolicySpec& spec = SandboxPolicy();
  for (const SyscallRule& rule : spec.rules) {
    for (const std::string& name : rule.names) {
      INFO(name);
      const std::optional<uint32_t> nr = X86_64SyscallNumber(name);
      REQUIRE(nr.has_value());
      CHECK(*nr <= spec.reviewed_through_nr);
      for (const SyscallRange& range : spec.unassigned) {
        CHECK_FALSE((*nr >= range.first && *nr <= range.last));
      }
    }
  }
}

TEST_CASE("the review covers every x86_64 syscall up to the bound", "[unit]") {
  // Every number up to reviewed_through_nr is either in an unassigned hole or named by some
  // rule: moving the bound without deciding about the new syscalls fails here.
  const PolicySpec& spec = SandboxPolicy();
  std::set<std::string> named;
  for (const SyscallRule& rule : spec.rules) named.insert(rule.names.begin(), rule.names.end());
  for (uint32_t nr = 0; nr <= spec.reviewed_through_nr; ++nr) {
    const bool hole =
        std::any_of(spec.unassigned.begin(), spec.unassigned.end(),
                    [&](const SyscallRange& r) { return nr >= r.first && nr <= r.last; });
    if (hole) continue;
    const std::string name = X86_64SyscallName(nr);
    INFO("syscall number " << nr);
    REQUIRE_FALSE(name.empty());  // the table is dense outside the holes
    INFO(name);
    CHECK(named.contains(name));
  }
}

TEST_CASE("DESIGN.md's denied syscalls are refused with EPERM and never allowed", "[unit]") {
  const PolicySpec& spec = SandboxPolicy();
  const std::vector<std::string> denied = {"ptrace",
                                           "process_vm_readv",
                                           "process_vm_writev",
                                           "bpf",
                                           "perf_event_open",
                                           "userfaultfd",
                                           "io_uring_setup",
                                           "io_uring_enter",
                                           "io_uring_register",
                                           "keyctl",
                                           "add_key",
                                           "request_key",
                                           "mount",
                                           "umount2",
                                           "mount_setattr",
                                           "move_mount",
                                           "open_tree",
                                           "fsopen",
                                           "fsconfig",
                                           "fsmount",
                                           "fspick",
                                           "unshare",
                                           "setns",
                                           "pivot_root",
                                           "chroot",
                                           "kexec_load",
                                           "kexec_file_load",
                                           "reboot",
                                           "swapon",
                                           "swapoff",
                                           "init_module",
                                           "finit_module",
                                           "delete_module",
                                           "kcmp",
                                           "pidfd_getfd",
                                           "lookup_dcookie",
                                           "quotactl",
                                           "acct",
                                           "settimeofday",
                                           "clock_settime",
                                           "adjtimex",
                                           "clock_adjtime",
                                           "sethostname",
                                           "setdomainname",
                                           "iopl",
                                           "ioperm",
                                           "syslog",
                                           "vhangup",
                                           "name_to_handle_at",
                                           "open_by_handle_at",
                                           "memfd_secret"};
  for (const std::string& name : denied) {
    INFO(name);
    const std::vector<const SyscallRule*> rules = RulesFor(spec, name);
    REQUIRE(rules.size() == 1);
    CHECK(rules[0]->action == Action::kErrno);
    CHECK(rules[0]->errno_value == EPERM);
    CHECK(rules[0]->args.empty());
  }
}

TEST_CASE("clone is allowed only without namespace flags, clone3 answers ENOSYS", "[unit]") {
  const PolicySpec& spec = SandboxPolicy();
  const std::vector<const SyscallRule*> clone = RulesFor(spec, "clone");
  REQUIRE(clone.size() == 1);
  CHECK(clone[0]->action == Action::kAllow);
  REQUIRE(clone[0]->args.size() == 1);
  const ArgCondition& flags = clone[0]->args[0];
  CHECK(flags.index == 0);
  CHECK(flags.op == Cmp::kMaskedEq);
  CHECK(flags.value_two == 0);
  for (uint64_t flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                        CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME}) {
    INFO("flag " << flag);
    CHECK((flags.value & flag) == flag);
  }
  // Threads and fork must still pass.
  CHECK((flags.value & (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                        CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID |
                        CLONE_CHILD_SETTID | CLONE_VFORK)) == 0);

  const std::vector<const SyscallRule*> clone3 = RulesFor(spec, "clone3");
  REQUIRE(clone3.size() == 1);
  CHECK(clone3[0]->action == Action::kErrno);
  CHECK(clone3[0]->errno_value == ENOSYS);
}

TEST_CASE("what CPython and its libraries need is allowed", "[unit]") {
  const std::vector<std::string> allowed = UnconditionallyAllowed(SandboxPolicy());
  for (const char* name : {"rseq",
                           "futex",
                           "set_robust_list",
                           "epoll_create1",
                           "epoll_ctl",
                           "epoll_wait",
                           "epoll_pwait",
                           "eventfd2",
                           "memfd_create",
                           "getrandom",
                           "statx",
                           "close_range",
                           "pidfd_open",
                           "pidfd_send_signal",
                           "prlimit64",
                           "sched_getaffinity",
                           "sched_yield",
                           "sched_setaffinity",
                           "mmap",
                           "mprotect",
                           "madvise",
                           "execve",
                           "wait4",
                           "vfork",
                           "fork",
                           "pipe2",
                           "dup3",
                           "arch_prctl",
                           "set_tid_address",
                           "sigaltstack",
                           "rt_sigaction",
                           "faccessat2",
                           "openat2",
                           "copy_file_range",
                           "sendfile",
                           "shmget",
                           "semop",
                           "ioctl"}) {
    INFO(name);
    CHECK(Contains(allowed, name));
  }
  const std::vector<std::string> conditional = ConditionallyAllowed(SandboxPolicy());
  CHECK(conditional == std::vector<std::string>{"clone", "personality", "socket", "socketpair"});
}

TEST_CASE("socket families: unix, inet, inet6 and route netlink only", "[unit]") {
  std::set<uint64_t> families;
  for (const SyscallRule* rule : RulesFor(SandboxPolicy(), "socket")) {
    REQUIRE(rule->action == Action::kAllow);
    REQUIRE_FALSE(rule->args.empty());
    const ArgCondition& family = rule->args[0];
    REQUIRE(family.index == 0);
    REQUIRE(family.op == Cmp::kMaskedEq);
    REQUIRE(family.value == 0xffffffffULL);
    families.insert(family.value_two);
    if (family.value_two == 16 /* AF_NETLINK */) {
      REQUIRE(rule->args.size() == 2);
      CHECK(rule->args[1].index == 2);
      CHECK(rule->args[1].value_two == 0 /* NETLINK_ROUTE */);
    }
  }
  CHECK(families == std::set<uint64_t>{1 /* AF_UNIX */, 2 /* AF_INET */, 10 /* AF_INET6 */,
                                       16 /* AF_NETLINK */});
}

TEST_CASE("ValidatePolicySpec rejects specs the compiler or Docker would misread", "[unit]") {
  PolicySpec base;
  base.default_errno = EPERM;
  base.unknown_errno = ENOSYS;
  base.reviewed_through_nr = 456;
  base.rules = {SyscallRule{{"read"}, Action::kAllow, 0, {}, ""}};
  REQUIRE(ValidatePolicySpec(base));

  SECTION("two tests of one argument in one rule") {
    PolicySpec spec = base;
    spec.rules.push_back(SyscallRule{
        {"socket"}, Action::kAllow, 0, {{0, Cmp::kGt, 2, 0}, {0, Cmp::kLt, 10, 0}}, ""});
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
  SECTION("allowed and refused unconditionally") {
    PolicySpec spec = base;
    spec.rules.push_back(SyscallRule{{"read"}, Action::kErrno, EPERM, {}, ""});
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
  SECTION("a conditional allow made dead by an unconditional one") {
    PolicySpec spec = base;
    spec.rules.push_back(SyscallRule{{"read"}, Action::kAllow, 0, {{0, Cmp::kEq, 1, 0}}, ""});
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
  SECTION("errno out of range") {
    PolicySpec spec = base;
    spec.rules.push_back(SyscallRule{{"write"}, Action::kErrno, 4096, {}, ""});
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
  SECTION("argument index past 5") {
    PolicySpec spec = base;
    spec.rules.push_back(SyscallRule{{"write"}, Action::kAllow, 0, {{6, Cmp::kEq, 1, 0}}, ""});
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
  SECTION("overlapping unassigned ranges") {
    PolicySpec spec = base;
    spec.unassigned = {{335, 400}, {390, 423}};
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
  SECTION("a range beyond the reviewed bound") {
    PolicySpec spec = base;
    spec.unassigned = {{450, 460}};
    CHECK_FALSE(ValidatePolicySpec(spec));
  }
}

}  // namespace
}  // namespace sandbox::seccomp::policy_spec_test
