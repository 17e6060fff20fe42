#include "rootfs/whiteout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>
#include <vector>

#include "rootfs/in_root.h"

namespace sandbox::rootfs {
namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kAufsMetaPrefix = ".wh..wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

Result<WhiteoutName> ClassifyWhiteout(const EntryPath& path) {
  if (path.IsRoot()) return WhiteoutName{};
  for (size_t i = 0; i + 1 < path.parts.size(); ++i) {
    const std::string& dir = path.parts[i];
    // AUFS kept hardlink bookkeeping in ".wh..wh.plnk/": never part of the image.
    if (StartsWith(dir, kAufsMetaPrefix)) return WhiteoutName{WhiteoutKind::kAufsMeta, {}};
    if (StartsWith(dir, kWhiteoutPrefix)) {
      return Fail(ErrorCode::kInvalidPath, "invalid whiteout: '{}' used as a directory",
                  path.Joined());
    }
  }
  const std::string& base = path.Base();
  if (base == kOpaqueMarker) return WhiteoutName{WhiteoutKind::kOpaque, {}};
  if (StartsWith(base, kAufsMetaPrefix)) return WhiteoutName{WhiteoutKind::kAufsMeta, {}};
  if (!StartsWith(base, kWhiteoutPrefix)) return WhiteoutName{};
  std::string target = base.substr(kWhiteoutPrefix.size());
  if (target.empty() || target == "." || target == "..") {
    return Fail(ErrorCode::kInvalidPath, "invalid whiteout '{}'", path.Joined());
  }
  return WhiteoutName{WhiteoutKind::kRemove, std::move(target)};
}

Status ClearLowerEntries(int dir_fd, const std::string& dir_path,
                         const std::function<bool(const std::string&)>& keep,
                         uint64_t* freed_bytes) {
  SBX_ASSIGN_OR_RETURN(auto names, ListDirAt(dir_fd));
  for (const auto& name : names) {
    std::string path = dir_path.empty() ? name : dir_path + "/" + name;
    bool kept = keep(path);
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return FailSys("fstatat", path);
    }
    if (!S_ISDIR(st.st_mode)) {
      if (kept) continue;
      if (::unlinkat(dir_fd, name.c_str(), 0) != 0) return FailSys("unlinkat", path);
      if (S_ISREG(st.st_mode) && st.st_nlink == 1)
        *freed_bytes += static_cast<uint64_t>(st.st_size);
      continue;
    }
    // A directory: drop its lower entries; it stays if this layer made it or still has
    // entries of this layer inside (an implicit parent).
    bool empty = false;
    {
      Fd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child) return FailSys("openat", path);
      SBX_TRY(ClearLowerEntries(child.get(), path, keep, freed_bytes));
      SBX_ASSIGN_OR_RETURN(auto left, ListDirAt(child.get()));
      empty = left.empty();
    }
    if (!kept && empty && ::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0) {
      return FailSys("rmdir", path);
    }
  }
  return {};
}

}  // namespace sandbox::rootfs
