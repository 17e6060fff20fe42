// ImageStore: the content-addressed store of unpacked images under SANDBOX_STATE_DIR/images.
// Images are keyed by their config digest; names ("python", "python-small") map to digests.
// Imports are atomic (unpack into a temp dir, then rename) and safe when two race.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::rootfs {

// The parts of an OCI image config a sandbox needs.
struct ImageConfig {
  std::vector<std::string> env;  // KEY=VALUE
  std::string working_dir;
  std::string user;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string architecture = "amd64";
  std::string os = "linux";
};

struct StoredImage {
  std::string digest;  // "sha256:<hex>" of the image config
  std::vector<std::string> names;
  std::string rootfs;       // absolute host path of the unpacked, read-only-use tree
  uint64_t size_bytes = 0;  // unpacked size
  std::string created;      // RFC 3339, from the config (or import time)
  ImageConfig config;
  bool reused = false;  // Import(): the image was already stored; nothing was unpacked
};

// Progress of an Import, reported while layers are unpacked (for a terminal display).
struct ImportProgress {
  size_t layer = 0;  // 1-based index of the layer being unpacked
  size_t layer_count = 0;
  uint64_t bytes_done = 0;   // stored (compressed) bytes read so far, over all layers
  uint64_t bytes_total = 0;  // stored size of all layers
};

struct ImportOptions {
  std::string name;  // optional name to map to the digest ("" = from the archive's tag)
  // Caps against hostile archives (all enforced while streaming, before anything is trusted).
  uint64_t max_total_bytes = 16ull << 30;
  uint64_t max_file_bytes = 8ull << 30;
  uint64_t max_entries = 2'000'000;
  uint32_t max_path_bytes = 4096;
  // Called from the importing thread, at least once per layer and about once per MiB.
  std::function<void(const ImportProgress&)> progress;
};

// Mount points every stored rootfs gets (empty dirs), so a read-only bind of it can take the
// sandbox's mounts: /proc /dev /sys /tmp /mnt/data /mnt/wheelhouse /.sandbox (and the gVisor
// backend's /dev/.sandbox-egress). Whatever the
// image had at these paths (a file, a symlink such as "tmp -> var/tmp") is replaced by a real
// directory. Defined here so callers can iterate it (`for (const char* p : kRootfsMountPoints)`).
inline constexpr const char* kRootfsMountPoints[] = {
    "/proc",
    "/dev",
    "/sys",
    layout::kTmpDir,
    layout::kDataDir,
    layout::kWheelhouseDir,
    layout::kAgentDir,
    layout::kGvisorEgressDir,
};

class ImageStore {
 public:
  // `state_dir` is SANDBOX_STATE_DIR; images live in state_dir/images.
  explicit ImageStore(std::string state_dir);

  // The default state dir: $SANDBOX_STATE_DIR, else /var/lib/mcp-sandbox for root, else
  // $XDG_STATE_HOME/mcp-sandbox (or ~/.local/state/mcp-sandbox).
  static std::string DefaultStateDir();

  // Imports an OCI layout (dir or tar), a docker-save tarball (legacy or >= v25), or a
  // docker-export flat rootfs tar. Verifies digests and diff_ids. Importing an image already
  // stored only (re)maps the name and returns quickly.
  Result<StoredImage> Import(const std::string& path, const ImportOptions& options = {});

  // By name or by digest (full or a unique prefix of the hex, as docker does).
  Result<StoredImage> Find(const std::string& name_or_digest) const;
  Result<std::vector<StoredImage>> List() const;
  // Removes the name; removes the image when no name is left or when given a digest. Before an
  // image itself goes, `may_remove` (when given) is asked with the path of its unpacked tree;
  // an error from it (say, a running sandbox uses the tree) stops the removal, names untouched.
  using RemovalCheck = std::function<Status(const std::string& rootfs)>;
  Status Remove(const std::string& name_or_digest, const RemovalCheck& may_remove = {});

  const std::string& state_dir() const { return state_dir_; }

 private:
  std::string state_dir_;
};

}  // namespace sandbox::rootfs
