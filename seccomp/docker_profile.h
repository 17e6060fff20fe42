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
//  - conditional refusals with the default errno (ioctl TIOCSTI/TIOCLINUX/TIOCSETD): runc
//    (libcontainer/seccomp) skips every rule whose action, errno included, equals the default
//    action, so such a rule would vanish and the call's unconditional allow would let the
//    refused requests through. They are exported with EACCES instead (EPERM if the default
//    were EACCES): runc keeps them, and Python raises the same PermissionError for both.
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
