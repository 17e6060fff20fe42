// Archives made by the tests themselves: layer tars (libarchive's writer, which writes whatever
// it is told, hostile names included), gzip/zstd blobs, and whole images in every input format
// the store reads (OCI layout dir/tar, docker save legacy and >= v25, docker export).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandbox::testing {

struct TarEntry {
  enum class Kind { kFile, kDir, kSymlink, kHardlink, kCharDevice, kBlockDevice, kFifo };
  std::string name;
  Kind kind = Kind::kFile;
  std::string data;
  mode_t mode = 0644;
  std::string link;  // symlink target or hardlink target
  std::vector<std::pair<std::string, std::string>> xattrs;
  int64_t mtime = 1'700'000'000;
  int64_t uid = 0;               // and gid
  std::string uname;             // "" = none
  std::optional<int64_t> atime;  // as a build tool writes it; unset = none
};

TarEntry File(std::string name, std::string data, mode_t mode = 0644);
TarEntry Dir(std::string name, mode_t mode = 0755, int64_t uid = 0);
TarEntry Symlink(std::string name, std::string target);
TarEntry Hardlink(std::string name, std::string target);
TarEntry Special(std::string name, TarEntry::Kind kind);

// A pax tar of the entries, in order.
std::string MakeTar(const std::vector<TarEntry>& entries);
// MakeTar written to `path`.
void WriteTar(const std::string& path, const std::vector<TarEntry>& entries);

enum class Codec { kNone, kGzip, kZstd };
std::string Compress(const std::string& data, Codec codec);
std::string Decompress(const std::string& data);  // gzip or zstd, sniffed

std::string Sha256Of(const std::string& data);

// Files of an image layout by path; symlinks only matter for tars (podman's docker-archive).
struct Layout {
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> symlinks;  // path -> target
};

struct ImageSpec {
  std::vector<std::string> layers;  // uncompressed layer tars, bottom first
  Codec codec = Codec::kNone;       // how layer blobs are stored (OCI formats)
  std::string ref_name = "test:1";
  std::string architecture = "amd64";
  // Deliberate faults.
  std::optional<size_t> wrong_diff_id;  // the config lists a wrong diff_id for this layer
  std::optional<size_t> corrupt_blob;   // this layer's blob is changed after hashing
  std::optional<size_t> missing_blob;   // this layer's blob is left out
  bool multi_platform = false;          // index -> nested index -> amd64 + arm64 + attestation
};

struct BuiltImage {
  Layout layout;
  std::string config_hex;
  std::vector<std::string> layer_hexes;  // blob digests of the (host platform's) layers
};

// index.json + oci-layout + blobs.
BuiltImage OciLayout(const ImageSpec& spec);
// The OCI layout plus docker's manifest.json naming blobs/sha256/<hex> (moby PR #44598).
BuiltImage DockerSaveV25(const ImageSpec& spec);
// manifest.json + <config hex>.json + <id>/layer.tar + repositories; uncompressed layers.
// With `podman_links`, layer.tar files are symlinks to ../<diff_id>.tar (podman#11613).
BuiltImage DockerSaveLegacy(const ImageSpec& spec, bool podman_links = false);

void WriteLayoutDir(const Layout& layout, const std::string& dir);
void WriteLayoutTar(const Layout& layout, const std::string& path);
void WriteBytes(const std::string& path, const std::string& data);
std::string ReadBytes(const std::string& path);

}  // namespace sandbox::testing
