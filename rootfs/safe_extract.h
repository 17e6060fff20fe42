// Applies image layers onto a directory, treating every archive as hostile. The rules:
//   - names are normalized by NormalizeEntryPath (leading "/" stripped, ".." refuses the import);
//   - the parent of every entry is resolved with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS|
//     RESOLVE_NO_XDEV), so a symlink made by an earlier entry or layer ("a -> /tmp/outside",
//     then "a/x") resolves inside the root as after chroot and can never redirect a write out
//     of it; merged-/usr images ("bin -> usr/bin" below, "bin/foo" above) work the same way;
//   - leaves are created with O_NOFOLLOW|O_EXCL after the old entry is unlinked;
//   - hardlinks only to regular files already inside the root (target resolved in the root);
//     links to anything else or to nothing are skipped;
//   - device nodes, fifos and sockets are skipped (the sandbox gets its own /dev);
//   - setuid/setgid bits are stripped; only user.* xattrs are applied, so file capabilities
//     (security.capability), trusted.* (overlayfs whiteouts and redirects) and security.* go;
//   - caps on entries, file size and path length (and the layer readers cap total bytes);
//   - no chown: everything belongs to the invoking user;
//   - whiteouts per the OCI layer spec (whiteout.h); directory modes and mtimes are set last.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "rootfs/archive_reader.h"
#include "rootfs/entry_path.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

struct ExtractLimits {
  uint64_t max_file_bytes = 8ull << 30;
  uint64_t max_entries = 2'000'000;  // over all layers
  uint32_t max_path_bytes = 4096;
};

struct ExtractStats {
  uint64_t entries = 0;
  uint64_t files = 0;
  uint64_t directories = 0;
  uint64_t symlinks = 0;
  uint64_t hardlinks = 0;
  uint64_t whiteouts = 0;
  uint64_t file_bytes = 0;       // data written
  uint64_t tree_bytes = 0;       // size of the regular files in the tree (hardlinks once)
  uint64_t skipped_special = 0;  // devices, fifos, sockets
  uint64_t skipped_links = 0;    // hardlinks to nothing or to non-regular files
  uint64_t stripped_setid = 0;
  uint64_t dropped_xattrs = 0;
};

class LayerApplier {
 public:
  // `root_dir` must be an existing, empty directory on the filesystem of the store.
  static Result<std::unique_ptr<LayerApplier>> Create(const std::string& root_dir,
                                                      const ExtractLimits& limits);
  LayerApplier(const LayerApplier&) = delete;
  LayerApplier& operator=(const LayerApplier&) = delete;

  // Applies the next layer (bottom first). On failure the tree is in an undefined state and
  // must be thrown away.
  Status ApplyLayer(LayerReader& layer);

  // Makes `path` (like "mnt/data") a real directory, replacing any non-directory on the way.
  // For the mount points a read-only bind of the rootfs needs. Call before Finish().
  Status EnsureDirectory(const std::string& path);

  // Sets directory modes and mtimes, deepest first (setting them earlier would let later
  // entries change mtimes, and a 0555 directory would refuse later entries).
  Status Finish();

  const ExtractStats& stats() const { return stats_; }

 private:
  struct Parent {
    std::string path;       // as named in the archive ("bin/x" for "bin/x/foo")
    std::string canonical;  // where it really is ("usr/bin/x" when bin -> usr/bin)
    Fd fd;                  // O_PATH
  };
  struct DirAttrs {
    mode_t mode = 0755;
    bool has_mtime = false;
    timespec mtime{};
  };

  LayerApplier() = default;
  Status ApplyEntry(LayerReader& layer, archive_entry* entry);
  // The resolved parent directory of `path`; creates missing parents when `create`.
  // nullptr (not an error) when `create` is false and the parent does not exist.
  Result<const Parent*> OpenParent(const EntryPath& path, bool create);
  Status CreateMissingParents(const EntryPath& path);
  std::string Canonical(int dir_fd, const std::string& fallback) const;
  // Unlinks whatever is at parent/name (recursively for directories). With `keep_dir`, an
  // existing directory stays and true is returned.
  Result<bool> RemoveExisting(const Parent& parent, const std::string& name, bool keep_dir);

  Status ApplyWhiteout(const EntryPath& path, const std::string& target);
  Status ApplyOpaque(const EntryPath& path);
  Status CreateDirectory(const Parent& parent, const std::string& name, archive_entry* entry);
  Status CreateFile(LayerReader& layer, const Parent& parent, const std::string& name,
                    archive_entry* entry);
  Status CreateSymlink(const Parent& parent, const std::string& name, archive_entry* entry);
  Status CreateHardlink(const Parent& parent, const std::string& name, const char* target);
  mode_t SanitizedMode(archive_entry* entry);
  void ApplyXattrs(int fd, archive_entry* entry, const std::string& path);
  static std::string Key(const std::string& canonical_dir, const std::string& name) {
    return canonical_dir.empty() ? name : canonical_dir + "/" + name;
  }

  Fd root_;
  std::string root_path_;  // as the kernel names it, to turn fd paths into canonical ones
  ExtractLimits limits_;
  ExtractStats stats_;
  // What the kernel strips from creation modes below the root (CreationMask), if known.
  std::optional<mode_t> creation_mask_;
  // Canonical paths of the entries the current layer made: its whiteouts must spare them
  // ("entries in the same layer as a whiteout are not hidden by it", OCI layer spec).
  std::unordered_set<std::string> layer_entries_;
  // Directory attributes to apply at the end, by canonical path.
  std::map<std::string, DirAttrs> dir_attrs_;
  // The last parents resolved, most recent last: tar entries come grouped by directory, and
  // after a subdirectory the walk returns to its parent. Dropped whenever anything is
  // removed, since a removal is the only way a resolved path can change.
  static constexpr size_t kCachedParents = 8;
  std::vector<std::unique_ptr<Parent>> parents_;
};

}  // namespace sandbox::rootfs
