#include "runtime/ns/devices.h"

#include <sys/mount.h>

#include <string>

namespace sandbox::ns {

const std::vector<std::string_view>& SandboxDevices() {
  static const std::vector<std::string_view> devices = {"null",   "zero",    "full",
                                                        "random", "urandom", "tty"};
  return devices;
}

void AppendDevMounts(MountPlan& plan, uid_t uid, gid_t gid, uint64_t shm_bytes) {
  auto& ops = plan.ops;
  std::string owner = "uid=" + std::to_string(uid) + ",gid=" + std::to_string(gid);
  // Owned by the sandbox user while it is populated (the only id that may create inodes in
  // this user namespace), then made read-only so the sandbox cannot change it.
  ops.push_back(MountFsOp("tmpfs", "dev", MS_NOSUID | MS_NOEXEC,
                          "size=65536,nr_inodes=64,mode=0755," + owner, "mount /dev"));
  ops.push_back(SetFsIdsOp(uid, gid, "switch fs ids to the sandbox user"));
  for (std::string_view device : SandboxDevices()) {
    std::string inside = "/dev/" + std::string(device);
    ops.push_back(MakeFileOp(inside.substr(1), "create " + inside));
    // The source is the host's node: a user namespace cannot mknod (and its tmpfs is nodev).
    ops.push_back(BindOp(inside, inside.substr(1), /*recursive=*/false, "bind " + inside));
    ops.push_back(SetAttrsOp(inside.substr(1), MS_NOSUID | MS_NOEXEC, /*recursive=*/false,
                             "make " + inside + " nosuid,noexec"));
  }
  const std::pair<const char*, const char*> links[] = {
      {"/proc/self/fd", "dev/fd"},       {"/proc/self/fd/0", "dev/stdin"},
      {"/proc/self/fd/1", "dev/stdout"}, {"/proc/self/fd/2", "dev/stderr"},
      {"pts/ptmx", "dev/ptmx"},
  };
  for (const auto& [to, link] : links) {
    ops.push_back(SymlinkOp(to, link, "symlink /" + std::string(link)));
  }
  ops.push_back(MakeDirOp("dev/pts", 0755, "create /dev/pts"));
  // newinstance: the sandbox's own ptys, not the host's (devpts(5)); no gid= option because
  // the tty group is not mapped in the user namespace.
  ops.push_back(MountFsOp("devpts", "dev/pts", MS_NOSUID | MS_NOEXEC,
                          "newinstance,ptmxmode=0666,mode=0620", "mount /dev/pts"));
  ops.push_back(MakeDirOp("dev/shm", 01777, "create /dev/shm"));
  ops.push_back(MountFsOp("tmpfs", "dev/shm", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          "size=" + std::to_string(shm_bytes) + ",mode=1777," + owner,
                          "mount /dev/shm"));
  ops.push_back(SetAttrsOp("dev", MS_RDONLY | MS_NOSUID | MS_NOEXEC, /*recursive=*/false,
                           "make /dev read-only"));
}

}  // namespace sandbox::ns
