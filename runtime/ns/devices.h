// The sandbox's minimal /dev (OCI runtime-spec "default devices"): a small tmpfs with the host's
// null, zero, full, random, urandom and tty bind-mounted in, the /proc/self/fd symlinks, a new
// devpts instance and a size-capped /dev/shm. Ops appended to a MountPlan (data, host side).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/ns/mounts.h"

namespace sandbox::ns {

// The host device nodes bound into the sandbox's /dev.
const std::vector<std::string_view>& SandboxDevices();

// Appends the /dev ops. Switches the fs ids to uid/gid first (kSetFsIds): see mounts.cc.
// Targets are relative to the rootfs.
void AppendDevMounts(MountPlan& plan, uid_t uid, gid_t gid, uint64_t shm_bytes);

}  // namespace sandbox::ns
