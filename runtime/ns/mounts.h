// The sandbox's mount tree as data (a flat list of MountOps built on the host, unit-testable
// without privileges) and the applier that performs one op in the child between clone and
// execve. Every op runs before pivot_root; targets are relative to the rootfs once the plan
// has chdir'd into it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/sandbox_layout.h"

namespace sandbox::ns {

enum class MountOpKind {
  kMakePrivate,   // mount(NULL, target, NULL, MS_REC|MS_PRIVATE): no propagation to the host
  kMount,         // mount(source, target, fstype, flags, data): a new filesystem instance
  kBind,          // mount(source, target, NULL, MS_BIND[|MS_REC])
  kSetAttrs,      // add attrs (MS_RDONLY/NOSUID/NODEV/NOEXEC) to the mount at target, keeping
                  // the flags the kernel locked when the mount came from a more privileged ns
  kMaskPath,      // if target exists: a directory gets an empty read-only tmpfs, anything else
                  // a bind of `source` (/dev/null); skipped when absent
  kReadOnlyPath,  // if target exists: bind it onto itself and make that read-only
  kMakeDir,       // mkdir(target, mode) in a tmpfs we mounted
  kMakeFile,      // an empty file (a mount point for a device bind) in a tmpfs we mounted
  kSymlink,       // symlink(source, target)
  kSetFsIds,      // setfsuid/setfsgid(uid, gid) (ids as seen inside the user namespace)
  kChdir,         // chdir(target): later relative targets resolve from here
  kWriteFile,     // write `data` to the existing file at target (a sysctl); skipped when absent
};

struct MountOp {
  MountOpKind kind = MountOpKind::kMount;
  std::string source;
  std::string target;  // absolute host path, or relative to the rootfs after kChdir
  std::string fstype;
  std::string data;         // mount options, e.g. "size=268435456,mode=1777,uid=1000,gid=1000"
  unsigned long flags = 0;  // MS_* (kMount, kBind, kSetAttrs)
  bool recursive = false;   // kBind: MS_REC; kSetAttrs: the whole subtree
  uint32_t mode = 0;        // kMakeDir
  uid_t uid = 0;            // kSetFsIds
  gid_t gid = 0;            // kSetFsIds
  std::string what;         // the step as a user reads it, with inside paths: "mount tmpfs on /tmp"
};

// One constructor per kind; `what` is the step as a user reads it ("mount /tmp").
MountOp MakePrivateOp(std::string target, std::string what);
MountOp MountFsOp(std::string fstype, std::string target, unsigned long flags, std::string data,
                  std::string what);
MountOp BindOp(std::string source, std::string target, bool recursive, std::string what);
MountOp SetAttrsOp(std::string target, unsigned long flags, bool recursive, std::string what);
MountOp MaskPathOp(std::string target, std::string what);  // files get /dev/null
MountOp ReadOnlyPathOp(std::string target, std::string what);
MountOp MakeDirOp(std::string target, uint32_t mode, std::string what);
MountOp MakeFileOp(std::string target, std::string what);
MountOp SymlinkOp(std::string points_to, std::string link, std::string what);
MountOp SetFsIdsOp(uid_t uid, gid_t gid, std::string what);
MountOp ChdirOp(std::string target, std::string what);
MountOp WriteFileOp(std::string target, std::string content, std::string what);

// A sysctl the child writes in its own user namespace, through the sandbox's fresh /proc
// before /proc/sys is made read-only: the path relative to the rootfs
// ("proc/sys/user/max_inotify_instances") and the value.
struct UserSysctl {
  std::string path;
  std::string value;
};

struct MountPlan {
  std::vector<MountOp> ops;
  // mount_setattr(2) (Linux 5.12) sets attrs without restating locked flags; without it the
  // applier remounts with the current flags read from statfs(2).
  bool use_mount_setattr = true;
};

// What the mount tree is made from (host side).
struct MountInputs {
  std::string rootfs;       // the image rootfs (host path), mounted read-only at /
  std::string agent_dir;    // mounted read-only at /.sandbox
  std::string wheelhouse;   // optional: read-only at /mnt/wheelhouse
  uint64_t tmp_bytes = 0;   // size of the /tmp tmpfs
  uint64_t data_bytes = 0;  // size of the /mnt/data tmpfs
  uint64_t shm_bytes = 64ull << 20;
  std::vector<UserSysctl> sysctls;  // written right after /proc is mounted
  uid_t uid = layout::kSandboxUid;  // the sandbox user, as seen inside
  gid_t gid = layout::kSandboxGid;
};

// The isolation baseline of DESIGN.md as a list of ops (see mounts.cc for the order and why).
MountPlan BuildMountPlan(const MountInputs& inputs);

// The paths inside the image that must be directories (mount points) for BuildMountPlan's
// ops; a symlink there would redirect a mount, so Start refuses one.
std::vector<std::string> RequiredMountPoints(const MountInputs& inputs);

// Whether this kernel has mount_setattr(2). Host side; probes once.
bool KernelHasMountSetattr();

// Child side (between clone and execve; async-signal-safe): performs one op.
// Returns 0 or the errno of the failing call.
int ApplyMountOp(const MountOp& op, bool use_mount_setattr);

}  // namespace sandbox::ns
