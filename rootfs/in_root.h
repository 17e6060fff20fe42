// Filesystem operations confined to a root directory fd: every path is resolved with
// openat2(RESOLVE_IN_ROOT), so "..", absolute symlinks and symlinks made by earlier archive
// entries all stay below the root, as they would after chroot (see openat2(2)).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

// How far a path may be resolved. kTree is for image roots we write into: no magic links
// (/proc/self/fd/...), no mount crossings. kSource is for reading an input layout directory,
// which may legitimately span mounts.
enum class Confinement { kTree, kSource };

// openat2(root_fd, path, flags|O_CLOEXEC, mode) with RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS
// (plus RESOLVE_NO_XDEV for kTree). "" and "." name the root itself. Retries EAGAIN (a
// concurrent rename). Fails with the errno of openat2, context naming the path.
Result<Fd> OpenInRoot(int root_fd, const std::string& path, int flags, mode_t mode = 0,
                      Confinement confinement = Confinement::kTree);

// The names in the directory `dir_fd` (without "." and ".."), in readdir order. Reads through a
// duplicate, so `dir_fd` stays open and usable.
Result<std::vector<std::string>> ListDirAt(int dir_fd);

// rm -rf of `name` inside `dir_fd`: never follows symlinks, handles read-only directories.
// A missing entry is not an error. Adds to `*freed_bytes` (if given) the size of the regular
// files whose last link went.
Status RemoveTreeAt(int dir_fd, const std::string& name, uint64_t* freed_bytes = nullptr);

// The path of an open directory as the kernel names it (readlink of /proc/self/fd/N).
Result<std::string> FdPath(int fd);

}  // namespace sandbox::rootfs
