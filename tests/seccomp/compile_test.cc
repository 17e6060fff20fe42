// The compiled program, evaluated instruction by instruction (bpf_interpreter.h): what it answers
// for every syscall of the table, for the argument-conditioned rules, for unknown numbers and
// for foreign ABIs. No fork, no privileges.
#include "seccomp/compile.h"

#include <linux/audit.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "seccomp/policy.h"
#include "seccomp/policy_spec.h"
#include "tests/seccomp/bpf_interpreter.h"

namespace sandbox::seccomp::compile_test {
namespace {

using testing::RunBpf;
using testing::X86_64Call;

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kKillProcess = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t Errno(int err) { return SECCOMP_RET_ERRNO | static_cast<uint32_t>(err); }

const BpfProgram& Program() {
  Result<const BpfProgram*> program = CompiledPolicy();
  if (!program) FAIL("CompiledPolicy: " << program.error().message);
  return **program;
}

uint32_t Nr(const char* name) {
  const std::optional<uint32_t> nr = X86_64SyscallNumber(name);
  REQUIRE(nr.has_value());
  return *nr;
}

// What the filter answers for `name(args...)` on x86_64.
uint32_t Verdict(const char* name, std::vector<uint64_t> args = {}) {
  const std::optional<uint32_t> verdict =
      RunBpf(Program().instructions(), X86_64Call(Nr(name), std::move(args)));
  REQUIRE(verdict.has_value());
  return *verdict;
}

uint32_t VerdictNr(uint32_t nr) {
  const std::optional<uint32_t> verdict = RunBpf(Program().instructions(), X86_64Call(nr));
  REQUIRE(verdict.has_value());
  return *verdict;
}

TEST_CASE("the compiled program fits the kernel's limits", "[unit]") {
  const BpfProgram& program = Program();
  CHECK(program.size() > 0);
  CHECK(program.size() <= BPF_MAXINSNS);
  CHECK(program.prog()->len == program.size());
  CHECK(program.prog()->filter == program.instructions().data());
  // A copy points at its own instructions.
  const BpfProgram copy = program;
  CHECK(copy.prog()->filter == copy.instructions().data());
  CHECK(copy.prog()->filter != program.prog()->filter);
}

TEST_CASE("CompiledPolicy compiles once and returns the same program", "[unit]") {
  Result<const BpfProgram*> first = CompiledPolicy();
  Result<const BpfProgram*> second = CompiledPolicy();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(*first == *second);
}

TEST_CASE("CompiledPolicy is safe to call from many threads at once", "[unit]") {
  // Each ctest test is a fresh process: the first calls below race to compile.
  constexpr int kThreads = 8;
  std::vector<const BpfProgram*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&seen, i] {
      Result<const BpfProgram*> program = CompiledPolicy();
      seen[static_cast<size_t>(i)] = program ? *program : nullptr;
    });
  }
  for (std::thread& thread : threads) thread.join();
  REQUIRE(seen[0] != nullptr);
  for (const BpfProgram* program : seen) CHECK(program == seen[0]);
}

TEST_CASE("every syscall of the table gets the policy's answer", "[unit]") {
  const PolicySpec& spec = SandboxPolicy();
  for (const SyscallRule& rule : spec.rules) {
    if (!rule.args.empty()) continue;  // conditional rules: tested one by one below
    for (const std::string& name : rule.names) {
      INFO(name);
      const uint32_t expected = rule.action == Action::kAllow ? kAllow : Errno(rule.errno_value);
      CHECK(Verdict(name.c_str()) == expected);
    }
  }
}

TEST_CASE("unknown and newer syscall numbers answer ENOSYS", "[unit]") {
  const PolicySpec& spec = SandboxPolicy();
  CHECK(VerdictNr(spec.reviewed_through_nr + 1) == Errno(ENOSYS));  // statmount (457) today
  CHECK(VerdictNr(462) == Errno(ENOSYS));                           // mseal
  CHECK(VerdictNr(1000) == Errno(ENOSYS));
  CHECK(VerdictNr(0x3fffffff) == Errno(ENOSYS));
  CHECK(VerdictNr(335) == Errno(ENOSYS));  // the unassigned hole (uretprobe took 335 later)
  CHECK(VerdictNr(400) == Errno(ENOSYS));
  CHECK(VerdictNr(423) == Errno(ENOSYS));
  // The edges of the hole belong to real syscalls.
  CHECK(VerdictNr(334) == kAllow);                       // rseq
  CHECK(VerdictNr(424) == kAllow);                       // pidfd_send_signal
  CHECK(VerdictNr(spec.reviewed_through_nr) == kAllow);  // futex_requeue
}

TEST_CASE("i386 and x32 calls kill the process", "[unit]") {
  seccomp_data i386 = X86_64Call(20);  // getpid on i386
  i386.arch = AUDIT_ARCH_I386;
  CHECK(RunBpf(Program().instructions(), i386) == kKillProcess);
  // x32: same AUDIT_ARCH as x86_64, the x32 bit in the number (getpid, and an unknown number
  // that must not be answered ENOSYS by the prologue).
  CHECK(VerdictNr(0x40000000 | 39) == kKillProcess);
  CHECK(VerdictNr(0x40000000 | 1000) == kKillProcess);
  seccomp_data aarch64 = X86_64Call(172);
  aarch64.arch = AUDIT_ARCH_AARCH64;
  CHECK(RunBpf(Program().instructions(), aarch64) == kKillProcess);
}

TEST_CASE("clone: threads and fork pass, namespace flags are refused", "[unit]") {
  const uint64_t thread_flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                                CLONE_CHILD_CLEARTID;
  const uint64_t fork_flags = CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD;
  CHECK(Verdict("clone", {thread_flags}) == kAllow);
  CHECK(Verdict("clone", {fork_flags}) == kAllow);
  CHECK(Verdict("clone", {CLONE_VM | CLONE_VFORK | SIGCHLD}) == kAllow);
  for (uint64_t flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                        CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME}) {
    INFO("flag " << flag);
    CHECK(Verdict("clone", {fork_flags | flag}) == Errno(EPERM));
  }
  // Garbage in the upper half does not hide a namespace flag.
  CHECK(Verdict("clone", {(uint64_t{1} << 40) | CLONE_NEWUSER | SIGCHLD}) == Errno(EPERM));
  CHECK(Verdict("clone3") == Errno(ENOSYS));
  CHECK(Verdict("unshare", {CLONE_NEWUSER}) == Errno(EPERM));
  CHECK(Verdict("fork") == kAllow);
  CHECK(Verdict("vfork") == kAllow);
}

TEST_CASE("socket: families, types and protocols", "[unit]") {
  const uint64_t cloexec = SOCK_CLOEXEC | SOCK_NONBLOCK;
  // Allowed.
  CHECK(Verdict("socket", {AF_UNIX, SOCK_STREAM, 0}) == kAllow);
  CHECK(Verdict("socket", {AF_UNIX, SOCK_DGRAM | cloexec, 0}) == kAllow);
  CHECK(Verdict("socket", {AF_UNIX, SOCK_SEQPACKET, 0}) == kAllow);
  CHECK(Verdict("socket", {AF_INET, SOCK_STREAM | cloexec, 0}) == kAllow);
  CHECK(Verdict("socket", {AF_INET, SOCK_STREAM, IPPROTO_TCP}) == kAllow);
  CHECK(Verdict("socket", {AF_INET6, SOCK_DGRAM, IPPROTO_UDP}) == kAllow);
  CHECK(Verdict("socket", {AF_INET, SOCK_DGRAM, IPPROTO_ICMP}) == kAllow);
  CHECK(Verdict("socket", {AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6}) == kAllow);
  CHECK(Verdict("socket", {AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* ROUTE */}) == kAllow);
  CHECK(Verdict("socket", {AF_NETLINK, SOCK_DGRAM, 0}) == kAllow);
  // An int argument with garbage in the upper half is read as the kernel reads it.
  CHECK(Verdict("socket", {(uint64_t{0xdead} << 32) | AF_INET, SOCK_STREAM, 0}) == kAllow);
  // Refused.
  CHECK(Verdict("socket", {AF_PACKET, SOCK_RAW, 0x0300}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_NETLINK, SOCK_RAW, 4 /* NETLINK_SOCK_DIAG */}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_ALG, SOCK_SEQPACKET, 0}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_VSOCK, SOCK_STREAM, 0}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_BLUETOOTH, SOCK_STREAM, 0}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_INET, SOCK_RAW, IPPROTO_ICMP}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_INET, SOCK_PACKET, 0}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_INET, SOCK_SEQPACKET, IPPROTO_SCTP}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_INET, SOCK_STREAM, IPPROTO_SCTP}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_INET6, SOCK_DCCP, IPPROTO_DCCP}) == Errno(EPERM));
  CHECK(Verdict("socket", {AF_UNSPEC, SOCK_STREAM, 0}) == Errno(EPERM));
  CHECK(Verdict("socketpair", {AF_UNIX, SOCK_STREAM, 0}) == kAllow);
  CHECK(Verdict("socketpair", {AF_INET, SOCK_STREAM, 0}) == Errno(EPERM));
}

TEST_CASE("ioctl: terminal injection refused, everything else allowed", "[unit]") {
  CHECK(Verdict("ioctl", {0, TIOCSTI}) == Errno(EPERM));
  CHECK(Verdict("ioctl", {0, TIOCLINUX}) == Errno(EPERM));
  CHECK(Verdict("ioctl", {0, TIOCSETD}) == Errno(EPERM));
  // The kernel reads the request as 32 bits: upper garbage must not smuggle TIOCSTI through.
  CHECK(Verdict("ioctl", {0, (uint64_t{1} << 32) | TIOCSTI}) == Errno(EPERM));
  CHECK(Verdict("ioctl", {0, ~uint64_t{0xffffffff} | TIOCLINUX}) == Errno(EPERM));
  CHECK(Verdict("ioctl", {0, TCGETS}) == kAllow);
  CHECK(Verdict("ioctl", {0, TIOCGWINSZ}) == kAllow);
  CHECK(Verdict("ioctl", {0, FIONREAD}) == kAllow);
  CHECK(Verdict("ioctl", {0, TIOCSTI + 1}) == kAllow);
}

TEST_CASE("personality: only the harmless personas and the query", "[unit]") {
  for (uint64_t persona : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xffffffffULL}) {
    INFO("persona " << persona);
    CHECK(Verdict("personality", {persona}) == kAllow);
  }
  CHECK(Verdict("personality", {0x0040000 /* ADDR_NO_RANDOMIZE */}) == Errno(EPERM));
  CHECK(Verdict("personality", {0x0400000 /* READ_IMPLIES_EXEC */}) == Errno(EPERM));
}

TEST_CASE("CompilePolicy refuses what it cannot express", "[unit]") {
  PolicySpec spec;
  spec.default_errno = EPERM;
  spec.unknown_errno = ENOSYS;
  spec.reviewed_through_nr = 456;
  spec.unassigned = {{335, 423}};
  spec.rules = {SyscallRule{{"read"}, Action::kAllow, 0, {}, ""}};
  REQUIRE(CompilePolicy(spec));

  SECTION("an unknown name") {
    spec.rules.push_back(SyscallRule{{"no_such_syscall"}, Action::kAllow, 0, {}, ""});
    CHECK_FALSE(CompilePolicy(spec));
  }
  SECTION("a name only other architectures have") {
    spec.rules.push_back(SyscallRule{{"socketcall"}, Action::kAllow, 0, {}, ""});
    CHECK_FALSE(CompilePolicy(spec));
  }
  SECTION("a syscall past the reviewed bound") {
    spec.reviewed_through_nr = 400;
    spec.unassigned = {{335, 400}};
    spec.rules.push_back(SyscallRule{{"pidfd_open"}, Action::kAllow, 0, {}, ""});
    CHECK_FALSE(CompilePolicy(spec));
  }
  SECTION("a conditional default-errno refusal the prologue cannot test") {
    spec.rules.push_back(SyscallRule{{"ioctl"}, Action::kAllow, 0, {}, ""});
    spec.rules.push_back(SyscallRule{{"ioctl"}, Action::kErrno, EPERM, {{1, Cmp::kGt, 5, 0}}, ""});
    CHECK_FALSE(CompilePolicy(spec));
  }
}

TEST_CASE("compile cost, and the cost of fetching the cached program", "[perf]") {
  using Clock = std::chrono::steady_clock;
  constexpr int kCompiles = 20;
  const auto compile_start = Clock::now();
  for (int i = 0; i < kCompiles; ++i) REQUIRE(CompilePolicy(SandboxPolicy()));
  const std::chrono::duration<double, std::micro> compile = Clock::now() - compile_start;

  REQUIRE(CompiledPolicy());  // warm
  constexpr int kFetches = 100000;
  const BpfProgram* last = nullptr;
  const auto fetch_start = Clock::now();
  for (int i = 0; i < kFetches; ++i) last = *CompiledPolicy();
  const std::chrono::duration<double, std::nano> fetch = Clock::now() - fetch_start;
  REQUIRE(last != nullptr);

  const double compile_us = compile.count() / kCompiles;
  const double fetch_ns = fetch.count() / kFetches;
  WARN("seccomp: compile " << compile_us << " us per policy (" << last->size()
                           << " instructions); cached fetch " << fetch_ns << " ns");
  CHECK(fetch_ns < compile_us * 1000.0);  // the cache is what session start pays
}

}  // namespace
}  // namespace sandbox::seccomp::compile_test
