// A `docker load`-able archive (docker save layout: manifest.json, the config, one layer tar)
// of any stored image, made from its unpacked rootfs. The Docker backend needs its images in
// the daemon; images made by `image build` keep their OCI archive for that, imported ones have
// only the store's tree. The layer holds the whole tree (regular files, directories, symlinks,
// hardlinks as hardlinks; owners, modes and mtimes as stored); the config is the stored one with
// rootfs.diff_ids naming that layer and the old history marked as empty layers.
#pragma once

#include <cstdint>
#include <string>

#include "rootfs/store.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

struct DockerArchive {
  std::string path;      // the tar: `docker load -i PATH` or POST /images/load
  std::string image_id;  // "sha256:<hex>" of its config, the id Docker gives the loaded image
  std::string repo_tag;  // the tag it loads as: "mcp-sandbox/stored:<store digest hex>"
  uint64_t size_bytes = 0;
  bool reused = false;  // EnsureDockerArchive: the cached archive was valid; nothing was written
};

// Writes the archive of `image` (as returned by ImageStore::Find) to `path`, replacing it. The
// same tree gives the same bytes, so the image id of an export does not change. Fails with
// kInternal when the tree changes while it is read, kNotFound when the image is gone.
Result<DockerArchive> WriteDockerArchive(const StoredImage& image, const std::string& path);

// The archive of `image` cached under state_dir/archives as docker-<store hex>.tar, with
// docker-<store hex>.json naming its image id; written (atomically: temp file, then rename)
// when missing or not matching its record. Processes asking at once take turns on a lock file
// (docker-<store hex>.lock); the later ones reuse the first one's archive. Archives of images
// no longer in the store are removed on the way.
Result<DockerArchive> EnsureDockerArchive(const std::string& state_dir, const StoredImage& image);

// Removes the cached archives (and their records) of images no longer in the store, skipping
// one that another process is writing. `image rm` calls it, so removing an image frees its
// export at once; returns how many were removed.
int RemoveOrphanDockerArchives(const std::string& state_dir);

}  // namespace sandbox::rootfs
