// The sandbox policy in Docker's seccomp profile format, for the Docker fallback backend
// (HostConfig.SecurityOpt "seccomp=<json>", or `docker run --security-opt seccomp=FILE`).
//
// Field names are those Docker 20.10+ reads (moby profiles/seccomp): defaultAction,
// defaultErrnoRet, architectures, syscalls[].{names, action, errnoRet, args[].{index, value,
// valueTwo, op}, comment}. Only SCMP_ARCH_X86_64 is listed (no subarchitectures), so runc's
// filter kills i386 and x32 calls, as ours does.
//
// What the format cannot carry, and what stands in for it under Docker:
//  - the ENOSYS prologue (compile.h): runc (>= 1.0.0-rc93) prepends its own stub answering
//    ENOSYS above the highest syscall the profile names, which is reviewed_through_nr (456)
//    here as well. The unassigned hole 335..423 gets EPERM instead of ENOSYS.
//  - an allowed call with refused arguments (ioctl TIOCSTI/TIOCLINUX/TIOCSETD): given an
//    unconditional allow and conditional refusals for one syscall, libseccomp (as runc drives
//    it) lets the allow win, and runc also skips any rule whose action, errno included, equals
//    the default action. Both made TIOCSTI pass under Docker. So the allow is exported as
//    conditional allows, prefix blocks "(request & mask) == value" over the 32 bits the kernel
//    reads, that hold every request but the refused ones; those fall to the default action
//    (EPERM, the errno the policy gives them), or get their own rule if their errno differs.
//    Unconditional refusals with the default errno are exported as written: runc drops them,
//    and the default action answers exactly the same.
//  - BADARCH=KILL_PROCESS: runc keeps libseccomp's default, KILL (the thread).
#pragma once

#include <nlohmann/json.hpp>

#include "seccomp/policy_spec.h"

namespace sandbox::seccomp {

// The profile as a JSON value (serialise with dump()).
nlohmann::json DockerProfile(const PolicySpec& spec);

}  // namespace sandbox::seccomp
