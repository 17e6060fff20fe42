// The input of an import, opened read-only: a directory (an OCI image layout) or a tar file
// (OCI archive, docker save, docker export), possibly gzip/zstd-compressed as a whole.
// Tar members are never extracted: they are located by offset and read in place, and the
// symlinks and hardlinks between them are resolved in memory (podman's docker-archive links
// "<id>/layer.tar -> ../<sha>.tar", podman#11613).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rootfs/archive_reader.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

class ImageSource {
 public:
  // `spool_dir` receives an anonymous temp file when the archive is compressed as a whole
  // (decompressed once, capped at `max_bytes`).
  static Result<std::unique_ptr<ImageSource>> Open(const std::string& path,
                                                   const std::string& spool_dir, uint64_t max_bytes,
                                                   uint64_t max_members);

  bool is_directory() const { return is_directory_; }
  const std::string& path() const { return path_; }

  // A file of the layout, by its name inside it ("index.json", "blobs/sha256/<hex>",
  // "<id>/layer.tar"). kNotFound when missing. The section's fd lives as long as this object.
  Result<FileSection> Find(const std::string& name) const;
  bool Exists(const std::string& name) const { return Find(name).has_value(); }
  // Reads a small file (JSON documents), refusing more than `max_bytes`.
  Result<std::string> ReadSmall(const std::string& name, uint64_t max_bytes) const;

  // For a tar: the whole (decompressed) tar, and whether its top level looks like a root
  // filesystem (bin/, usr/ or etc/): a `docker export`.
  FileSection WholeTar() const;
  bool LooksLikeRootfs() const;

 private:
  ImageSource() = default;
  Status IndexTar(uint64_t max_members);
  // Follows symlinks and hardlinks between members; at most 40 hops, like the kernel.
  Result<const TarMember*> ResolveMember(const std::string& name) const;

  std::string path_;
  bool is_directory_ = false;
  Fd fd_;  // the directory, or the (spooled) tar file
  uint64_t tar_size_ = 0;
  std::unordered_map<std::string, TarMember> members_;  // by normalized name
  mutable std::vector<std::unique_ptr<Fd>> opened_;     // blob files of a directory layout
};

// "./a//b/" -> "a/b"; ".." goes up but never above the top. Used for member names.
std::string NormalizeMemberName(const std::string& name);

}  // namespace sandbox::rootfs
