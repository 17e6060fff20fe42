// The fresh /proc of a sandbox and what is hidden or read-only in it (Docker's defaults, see
// moby daemon/pkg/oci/defaults.go): ops appended to a MountPlan (data, host side).
#pragma once

#include <string_view>
#include <vector>

#include "runtime/ns/mounts.h"

namespace sandbox::ns {

// Paths masked in /proc: files get /dev/null bound over them, directories an empty read-only
// tmpfs. Paths this kernel lacks are skipped in the child.
const std::vector<std::string_view>& MaskedProcPaths();
// Paths in /proc made read-only (a self-bind, then remounted read-only).
const std::vector<std::string_view>& ReadOnlyProcPaths();

// Appends: mount proc (nosuid, noexec, nodev) on proc/, the `sysctls` writes (while /proc/sys
// is still writable: the fresh proc shows the sandbox's own user namespace's table, which the
// child may set with its CAP_SYS_RESOURCE there), then the masks and read-only paths.
// Targets are relative to the rootfs (the plan has chdir'd into it).
void AppendProcMounts(MountPlan& plan, const std::vector<UserSysctl>& sysctls = {});

}  // namespace sandbox::ns
