// Compiles a PolicySpec to a seccomp BPF program for x86_64 (runs in the server, once).
//
// The program is two parts, run in this order:
//
//  1. A short hand-written prologue:
//       arch != x86_64, or nr has the x32 bit        -> go to part 2 (which kills: BADARCH)
//       nr > spec.reviewed_through_nr                 -> ERRNO(spec.unknown_errno)
//       nr inside one of spec.unassigned              -> ERRNO(spec.unknown_errno)
//       conditional refusals of an allowed syscall    -> ERRNO(rule.errno_value)
//         (ioctl TIOCSTI...: libseccomp refuses a rule whose action equals the default action,
//          so "EPERM for these requests, allow the rest" cannot be said there)
//     It is what runc's patchbpf does for "newer than the profile" numbers, extended to the holes
//     of the table; libseccomp itself cannot express number ranges.
//  2. The libseccomp program: native arch only, SCMP_FLTATR_ACT_BADARCH = KILL_PROCESS (so i386
//     via int 0x80 and x32 syscalls kill the process), default ERRNO(spec.default_errno), the
//     spec's rules (binary-tree optimised).
//
// Every jump of the prologue is forward and relative, so prepending it leaves libseccomp's
// program valid as exported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/base/result.h"
#include "seccomp/policy.h"
#include "seccomp/policy_spec.h"

namespace sandbox::seccomp {

// The x86_64 number of a syscall name as libseccomp knows it, or nullopt (unknown name, or a
// name that exists only on other architectures).
std::optional<uint32_t> X86_64SyscallNumber(const std::string& name);
// The x86_64 name of a number, or "" when libseccomp knows none.
std::string X86_64SyscallName(uint32_t nr);

// Validates and compiles; fails with kInvalidArgument for a spec that cannot be compiled as
// written (unknown name, a rule shadowed by the prologue, ...), kSandboxUnavailable when the
// native architecture is not x86_64, kInternal when libseccomp fails.
Result<BpfProgram> CompilePolicy(const PolicySpec& spec);

}  // namespace sandbox::seccomp
