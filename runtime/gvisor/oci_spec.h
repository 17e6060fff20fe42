// The OCI runtime spec (config.json) of one gVisor sandbox: the image's unpacked rootfs read-only,
// /mnt/data and /tmp as size-limited tmpfs, the agent read-only at /.sandbox, the sandbox user,
// no capabilities, no network, and the rlimits the Sentry enforces. The layout a session sees is
// the namespace backend's (runtime/sandbox_layout.h). Plain data in, JSON out.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/backend.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::gvisor {

struct OciInputs {
  std::string rootfs;             // host path of the image's unpacked rootfs
  std::string agent_dir;          // host dir of sandbox-init and worker.py
  std::string wheelhouse;         // "" = none
  std::vector<std::string> argv;  // the first process (sandbox-init)
  std::vector<std::string> env;
  std::string workdir;
  Limits limits;
  // "" = no egress; else the host dir of the egress bridge's socket (egress_bridge.h), bound at
  // layout::kGvisorEgressDir, whose socket sandbox-init then connects to per connection.
  std::string egress_dir;
  // The OCI linux.seccomp (guest_seccomp.h), enforced by runsc --oci-seccomp; null = none.
  nlohmann::json seccomp;
};

// The rlimits the Sentry applies to the sandbox's first process: those of RlimitsFor without a
// memory cgroup (RLIMIT_AS), and RLIMIT_NPROC always, since the Sentry counts the tasks of its
// own kernel (one sandbox).
std::vector<RlimitSetting> SentryRlimits(const Limits& limits);

nlohmann::json OciSpecFor(const OciInputs& inputs);

// The directories a mount of OciSpecFor needs in the rootfs ("mnt/data", ".sandbox", ...): the
// gofer would otherwise make them in the image store's rootfs (or fail with EACCES rootless).
std::vector<std::string> MountPointsIn(const OciInputs& inputs);

}  // namespace sandbox::gvisor
