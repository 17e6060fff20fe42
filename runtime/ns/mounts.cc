#include "runtime/ns/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "runtime/ns/devices.h"
#include "runtime/ns/proc_masks.h"

namespace sandbox::ns {

namespace {

// A sandbox path (sandbox_layout.h) as the plan's targets name it: relative to the rootfs, the
// child's working directory by then (see the order below).
std::string UnderRoot(std::string_view inside) { return std::string(inside.substr(1)); }

}  // namespace

// Order of the plan, and why:
//  1. "/" becomes MS_REC|MS_PRIVATE so nothing below propagates back to the host.
//  2. The rootfs is bind-mounted onto itself (recursive: a non-recursive bind would uncover
//     what submounts hide) so it is a mount point for pivot_root(2), and made read-only,
//     nosuid, nodev. The child then chdirs into it: every later target is relative to the
//     rootfs, so it is looked up from there and never needs search permission on the host
//     directories above the rootfs (a root server's child runs with fs ids it may not have).
//  3. Host directories (agent, wheelhouse) are bound read-only; /proc, /tmp and /mnt/data are
//     mounted — all before the fs ids change, while host paths are reachable as the server.
//  4. The fs ids switch to the sandbox user: a user namespace only lets mapped ids create
//     inodes (EOVERFLOW otherwise), and only 1000 is mapped. Then /dev is populated.
MountPlan BuildMountPlan(const MountInputs& in) {
  MountPlan plan;
  auto& ops = plan.ops;
  constexpr unsigned long kReadOnly = MS_RDONLY | MS_NOSUID | MS_NODEV;

  ops.push_back(MakePrivateOp("/", "make / private"));
  ops.push_back(BindOp(in.rootfs, in.rootfs, /*recursive=*/true, "bind the image rootfs"));
  ops.push_back(ChdirOp(in.rootfs, "chdir to the rootfs"));
  ops.push_back(SetAttrsOp(".", kReadOnly, /*recursive=*/true, "make / read-only"));

  ops.push_back(BindOp(in.agent_dir, UnderRoot(layout::kAgentDir), /*recursive=*/true,
                       std::string("bind ") + layout::kAgentDir));
  ops.push_back(SetAttrsOp(UnderRoot(layout::kAgentDir), kReadOnly, /*recursive=*/true,
                           std::string("make ") + layout::kAgentDir + " read-only"));
  if (!in.wheelhouse.empty()) {
    ops.push_back(BindOp(in.wheelhouse, UnderRoot(layout::kWheelhouseDir), /*recursive=*/true,
                         std::string("bind ") + layout::kWheelhouseDir));
    ops.push_back(SetAttrsOp(UnderRoot(layout::kWheelhouseDir), kReadOnly | MS_NOEXEC,
                             /*recursive=*/true,
                             std::string("make ") + layout::kWheelhouseDir + " read-only"));
  }

  AppendProcMounts(plan, in.sysctls);

  // The ids in tmpfs options are read in the mounter's user namespace: the sandbox user.
  std::string owner = "uid=" + std::to_string(in.uid) + ",gid=" + std::to_string(in.gid);
  ops.push_back(MountFsOp("tmpfs", UnderRoot(layout::kTmpDir), MS_NOSUID | MS_NODEV,
                          "size=" + std::to_string(in.tmp_bytes) + ",mode=1777," + owner,
                          std::string("mount ") + layout::kTmpDir));
  ops.push_back(MountFsOp("tmpfs", UnderRoot(layout::kDataDir), MS_NOSUID | MS_NODEV,
                          "size=" + std::to_string(in.data_bytes) + ",mode=0755," + owner,
                          std::string("mount ") + layout::kDataDir));

  AppendDevMounts(plan, in.uid, in.gid, in.shm_bytes);

  plan.use_mount_setattr = KernelHasMountSetattr();
  return plan;
}

namespace {

MountOp Op(MountOpKind kind, std::string target, std::string what) {
  MountOp op;
  op.kind = kind;
  op.target = std::move(target);
  op.what = std::move(what);
  return op;
}

}  // namespace

MountOp MakePrivateOp(std::string target, std::string what) {
  return Op(MountOpKind::kMakePrivate, std::move(target), std::move(what));
}

MountOp MountFsOp(std::string fstype, std::string target, unsigned long flags, std::string data,
                  std::string what) {
  MountOp op = Op(MountOpKind::kMount, std::move(target), std::move(what));
  op.source = fstype;
  op.fstype = std::move(fstype);
  op.flags = flags;
  op.data = std::move(data);
  return op;
}

MountOp BindOp(std::string source, std::string target, bool recursive, std::string what) {
  MountOp op = Op(MountOpKind::kBind, std::move(target), std::move(what));
  op.source = std::move(source);
  op.recursive = recursive;
  return op;
}

MountOp SetAttrsOp(std::string target, unsigned long flags, bool recursive, std::string what) {
  MountOp op = Op(MountOpKind::kSetAttrs, std::move(target), std::move(what));
  op.flags = flags;
  op.recursive = recursive;
  return op;
}

MountOp MaskPathOp(std::string target, std::string what) {
  MountOp op = Op(MountOpKind::kMaskPath, std::move(target), std::move(what));
  op.source = "/dev/null";
  return op;
}

MountOp ReadOnlyPathOp(std::string target, std::string what) {
  MountOp op = Op(MountOpKind::kReadOnlyPath, std::move(target), std::move(what));
  op.flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
  return op;
}

MountOp MakeDirOp(std::string target, uint32_t mode, std::string what) {
  MountOp op = Op(MountOpKind::kMakeDir, std::move(target), std::move(what));
  op.mode = mode;
  return op;
}

MountOp MakeFileOp(std::string target, std::string what) {
  return Op(MountOpKind::kMakeFile, std::move(target), std::move(what));
}

MountOp SymlinkOp(std::string points_to, std::string link, std::string what) {
  MountOp op = Op(MountOpKind::kSymlink, std::move(link), std::move(what));
  op.source = std::move(points_to);
  return op;
}

MountOp SetFsIdsOp(uid_t uid, gid_t gid, std::string what) {
  MountOp op = Op(MountOpKind::kSetFsIds, "", std::move(what));
  op.uid = uid;
  op.gid = gid;
  return op;
}

MountOp ChdirOp(std::string target, std::string what) {
  return Op(MountOpKind::kChdir, std::move(target), std::move(what));
}

MountOp WriteFileOp(std::string target, std::string content, std::string what) {
  MountOp op = Op(MountOpKind::kWriteFile, std::move(target), std::move(what));
  op.data = std::move(content);
  return op;
}

std::vector<std::string> RequiredMountPoints(const MountInputs& in) {
  std::vector<std::string> points = {"proc", "dev", "tmp", "mnt/data", ".sandbox"};
  if (!in.wheelhouse.empty()) points.push_back("mnt/wheelhouse");
  return points;
}

bool KernelHasMountSetattr() {
  static const bool has = [] {
    // Invalid arguments on purpose: a kernel with the call answers EINVAL/EBADF, not ENOSYS.
    long rc = ::syscall(SYS_mount_setattr, -1, "", 0, nullptr, 0);
    return !(rc < 0 && errno == ENOSYS);
  }();
  return has;
}

// ---------------------------------------------------------------------- child side (AS-safe)

namespace {

unsigned int MountAttrsFromFlags(unsigned long flags) {
  unsigned int attrs = 0;
  if (flags & MS_RDONLY) attrs |= MOUNT_ATTR_RDONLY;
  if (flags & MS_NOSUID) attrs |= MOUNT_ATTR_NOSUID;
  if (flags & MS_NODEV) attrs |= MOUNT_ATTR_NODEV;
  if (flags & MS_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
  return attrs;
}

int SetAttrs(const char* target, unsigned long flags, bool recursive, bool use_mount_setattr) {
  if (use_mount_setattr) {
    struct mount_attr attr = {};
    attr.attr_set = MountAttrsFromFlags(flags);
    unsigned int at_flags = recursive ? AT_RECURSIVE : 0;
    if (::syscall(SYS_mount_setattr, AT_FDCWD, target, at_flags, &attr, sizeof attr) == 0) {
      return 0;
    }
    return errno;
  }
  // A remount in a user namespace must restate the flags the kernel locked on the mount
  // (mount_namespaces(7), "restrictions on mount namespaces"); statfs reports them. The ST_*
  // bits below have the values of the matching MS_* bits.
  struct statfs st;
  if (::statfs(target, &st) != 0) return errno;
  unsigned long kept = static_cast<unsigned long>(st.f_flags) &
                       (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS |
                        MS_MANDLOCK | MS_NOATIME | MS_NODIRATIME | MS_RELATIME);
  if (::mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | kept | flags, nullptr) != 0) {
    return errno;
  }
  return 0;
}

const char* OrNull(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

}  // namespace

int ApplyMountOp(const MountOp& op, bool use_mount_setattr) {
  const char* target = op.target.c_str();
  switch (op.kind) {
    case MountOpKind::kMakePrivate:
      return ::mount(nullptr, target, nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : errno;
    case MountOpKind::kMount:
      return ::mount(op.source.c_str(), target, op.fstype.c_str(), op.flags, OrNull(op.data)) == 0
                 ? 0
                 : errno;
    case MountOpKind::kBind: {
      unsigned long flags = op.recursive ? (MS_BIND | MS_REC) : static_cast<unsigned long>(MS_BIND);
      return ::mount(op.source.c_str(), target, nullptr, flags, nullptr) == 0 ? 0 : errno;
    }
    case MountOpKind::kSetAttrs:
      return SetAttrs(target, op.flags, op.recursive, use_mount_setattr);
    case MountOpKind::kMaskPath: {
      struct stat st;
      if (::lstat(target, &st) != 0) return errno == ENOENT ? 0 : errno;
      if (S_ISDIR(st.st_mode)) {
        return ::mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       "size=4k,nr_inodes=1,mode=0555") == 0
                   ? 0
                   : errno;
      }
      return ::mount(op.source.c_str(), target, nullptr, MS_BIND, nullptr) == 0 ? 0 : errno;
    }
    case MountOpKind::kReadOnlyPath: {
      struct stat st;
      if (::lstat(target, &st) != 0) return errno == ENOENT ? 0 : errno;
      if (::mount(target, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
      return SetAttrs(target, op.flags, /*recursive=*/true, use_mount_setattr);
    }
    case MountOpKind::kMakeDir:
      return ::mkdir(target, static_cast<mode_t>(op.mode)) == 0 ? 0 : errno;
    case MountOpKind::kMakeFile: {
      int fd = ::open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) return errno;
      ::close(fd);
      return 0;
    }
    case MountOpKind::kSymlink:
      return ::symlink(op.source.c_str(), target) == 0 ? 0 : errno;
    case MountOpKind::kSetFsIds:
      // setfsuid/setfsgid report no error; a second call returns the id now in force. Raw
      // syscalls like every id change in the child (see child_setup.cc).
      ::syscall(SYS_setfsgid, op.gid);
      if (static_cast<gid_t>(::syscall(SYS_setfsgid, op.gid)) != op.gid) return EPERM;
      ::syscall(SYS_setfsuid, op.uid);
      if (static_cast<uid_t>(::syscall(SYS_setfsuid, op.uid)) != op.uid) return EPERM;
      return 0;
    case MountOpKind::kChdir:
      return ::chdir(target) == 0 ? 0 : errno;
    case MountOpKind::kWriteFile: {
      // Absent: this kernel has no such counter (e.g. fanotify's before 5.13).
      int fd = ::open(target, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return errno == ENOENT ? 0 : errno;
      ssize_t n = ::write(fd, op.data.data(), op.data.size());
      int err = n < 0 ? errno : (static_cast<size_t>(n) != op.data.size() ? EIO : 0);
      ::close(fd);
      return err;
    }
  }
  return EINVAL;
}

}  // namespace sandbox::ns
