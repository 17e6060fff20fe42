// The names of archive entries, made safe to use below an image root. Pure logic.
//
// Policy (the archive is untrusted):
//   - a leading "/" is stripped: "/etc/passwd" means "etc/passwd" in the image, as tar, umoci
//     and containerd read it;
//   - empty and "." components are dropped ("./a//b/" is "a/b");
//   - any ".." component refuses the whole import: no legitimate layer needs one;
//   - a NUL byte refuses it too (libarchive already ends a name at the first NUL, so a
//     name like "a\0/../../x" reaches us as "a");
//   - names longer than the cap, or a component longer than NAME_MAX, refuse it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::rootfs {

struct EntryPath {
  std::vector<std::string> parts;  // never empty strings, "." or ".."

  bool IsRoot() const { return parts.empty(); }
  const std::string& Base() const { return parts.back(); }  // not for the root
  std::string Joined() const;                               // "a/b/c"; "" for the root
  std::string ParentJoined() const;                         // "a/b"; "" for top-level entries
};

// Normalizes a tar entry name or a hardlink target. Fails with kInvalidPath naming the entry.
Result<EntryPath> NormalizeEntryPath(std::string_view raw, uint32_t max_path_bytes);

}  // namespace sandbox::rootfs
