// The project's seccomp policy (seccomp/policy_spec.h) as a second wall inside a gVisor
// sandbox: the OCI spec's linux.seccomp, which runsc --oci-seccomp has the Sentry enforce on the
// sandbox's processes (Seccomp: 2 in their /proc/self/status), as the namespace backend's
// kernel does. A call the policy refuses then never reaches the Sentry's implementation of it
// (unshare, chroot, ptrace, mknod, ... which the Sentry would serve).
//
// The policy goes as the Docker profile (seccomp/docker_profile.h: the OCI field names), with
// one change: runsc (20221219, as runc did) answers every SCMP_ACT_ERRNO rule with EPERM,
// whatever its errnoRet, so a rule refusing with another errno becomes an allow and the Sentry's
// own answer stands: clone3 must be ENOSYS for glibc to fall back to clone (EPERM starts no
// thread), and this Sentry answers it ENOSYS itself. Only clone3 is such a rule today.
#pragma once

#include <nlohmann/json.hpp>

namespace sandbox::gvisor {

nlohmann::json GuestSeccomp();

}  // namespace sandbox::gvisor
