// The sandbox syscall policy as plain data: which x86_64 syscalls are allowed (some only for
// certain arguments), which are refused with which errno, and how numbers the policy does not
// know are answered. No libseccomp here: compile.h turns a PolicySpec into BPF, docker_profile.h
// into Docker's JSON, and the unit tests read it directly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::seccomp {

// Comparison operators, with the meaning of libseccomp's SCMP_CMP_* and Docker's "op" strings.
enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe, kMaskedEq };

// One test on a syscall argument (index 0..5), compared as a 64-bit value. For kMaskedEq the
// test is (arg & value) == value_two: the operand order of SCMP_CMP_MASKED_EQ and of Docker's
// "value"/"valueTwo".
struct ArgCondition {
  unsigned index = 0;
  Cmp op = Cmp::kEq;
  uint64_t value = 0;
  uint64_t value_two = 0;
};

enum class Action { kAllow, kErrno };

// One rule: these syscalls get `action` when every condition holds (no conditions: always).
// Several rules for one syscall are alternatives (OR); conditions inside one rule are ANDed and
// test distinct arguments (libseccomp cannot AND two tests of one argument, and Docker/runc
// would turn them into an OR).
struct SyscallRule {
  std::vector<std::string> names;
  Action action = Action::kAllow;
  int errno_value = 0;  // for kErrno
  std::vector<ArgCondition> args;
  std::string why;  // one line, exported as the Docker rule's "comment"
};

// An inclusive range of syscall numbers.
struct SyscallRange {
  uint32_t first = 0;
  uint32_t last = 0;
};

struct PolicySpec {
  // Known syscalls that no rule allows get this errno (the "default action").
  int default_errno = 0;
  // Numbers the policy does not know get this errno instead, so that libraries take their
  // fallback path as they would on an older kernel (glibc, Python and Go test for ENOSYS, never
  // for EPERM). "Not known" means: above reviewed_through_nr, or inside an unassigned range.
  int unknown_errno = 0;
  // The x86_64 syscall table was reviewed, number by number, up to this one.
  uint32_t reviewed_through_nr = 0;
  // Holes in the reviewed table (numbers never assigned on x86_64 at review time).
  std::vector<SyscallRange> unassigned;
  std::vector<SyscallRule> rules;
};

// The policy of DESIGN.md "Isolation baseline": an allowlist for x86_64, i386/x32 killed (that
// part lives in the compiler: it is about architectures, not syscalls).
const PolicySpec& SandboxPolicy();

// Structural checks that need no syscall table: errno ranges, argument indexes, one test per
// argument per rule, no syscall both allowed and refused unconditionally, sorted disjoint ranges.
Status ValidatePolicySpec(const PolicySpec& spec);

// Names with an unconditional allow rule.
std::vector<std::string> UnconditionallyAllowed(const PolicySpec& spec);
// Names with at least one conditional allow rule (and no unconditional one).
std::vector<std::string> ConditionallyAllowed(const PolicySpec& spec);

// Stable spellings used by Docker's profile format ("SCMP_CMP_MASKED_EQ", "SCMP_ACT_ERRNO").
std::string_view CmpName(Cmp op);
std::string_view ActionName(Action action);

}  // namespace sandbox::seccomp
