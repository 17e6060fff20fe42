// Whiteouts of the OCI layer spec (image-spec layer.md): ".wh.NAME" deletes NAME from the
// layers below; ".wh..wh..opq" makes its directory opaque (hides everything below it in lower
// layers). Whiteout files are never materialized. This file holds both the naming rules (pure)
// and the deletions they cause.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "rootfs/entry_path.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

enum class WhiteoutKind {
  kNone,      // an ordinary entry
  kRemove,    // ".wh.NAME": delete NAME from lower layers
  kOpaque,    // ".wh..wh..opq": hide the lower contents of the directory
  kAufsMeta,  // ".wh..wh.plnk", ".wh..wh.aufs"...: AUFS bookkeeping of old images; ignored
};

struct WhiteoutName {
  WhiteoutKind kind = WhiteoutKind::kNone;
  std::string target;  // for kRemove: NAME
};

// Classifies an entry by its name. Fails (kInvalidPath) for the names the spec calls invalid:
// a bare ".wh.", ".wh.." and ".wh..." (whiteouts of "." and ".."), and a whiteout name used
// as a directory ("x/.wh.y/z"), which would materialize it.
Result<WhiteoutName> ClassifyWhiteout(const EntryPath& path);

// Removes the lower-layer contents of directory `dir_fd` (an opaque whiteout). `keep(path)`
// is asked for each entry (path relative to the image root, like "usr/share/x") and is true
// for entries the current layer made: those stay, and so do directories that still hold such
// entries. Directories the layer made are emptied of lower entries too (they replaced the
// lower directory). Never follows symlinks. Adds the size of the regular files whose last link
// went to `*freed_bytes`.
Status ClearLowerEntries(int dir_fd, const std::string& dir_path,
                         const std::function<bool(const std::string&)>& keep,
                         uint64_t* freed_bytes);

}  // namespace sandbox::rootfs
