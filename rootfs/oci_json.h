// The JSON documents of OCI image layouts and docker save archives, parsed into plain structs.
// Pure logic: no files, no digests checked here (image_formats does that).
// References: opencontainers/image-spec image-index.md, manifest.md, config.md, descriptor.md;
// moby image/spec/v1.2.md for docker save's manifest.json.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rootfs/store.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

struct Platform {
  std::string os;
  std::string architecture;
  std::string variant;
};

struct Descriptor {
  std::string media_type;
  std::string digest_hex;  // validated sha256 hex
  int64_t size = -1;       // -1: not given
  std::optional<Platform> platform;
  std::map<std::string, std::string> annotations;
};

struct ImageIndex {
  std::vector<Descriptor> manifests;
};

struct ImageManifest {
  Descriptor config;
  std::vector<Descriptor> layers;  // bottom first
};

struct ParsedConfig {
  ImageConfig config;
  std::string created;                     // RFC 3339, may be empty
  std::vector<std::string> diff_id_hexes;  // rootfs.diff_ids, bottom first
};

// One image of docker save's manifest.json.
struct DockerSaveEntry {
  std::string config;                  // path inside the archive
  std::vector<std::string> repo_tags;  // "python:3.12"
  std::vector<std::string> layers;     // paths inside the archive, bottom first
};

enum class DocumentKind { kIndex, kManifest, kUnknown };

// Image indexes and docker manifest lists.
bool IsIndexMediaType(std::string_view media_type);
// OCI image manifests and docker schema 2 manifests.
bool IsManifestMediaType(std::string_view media_type);
// For descriptors without a mediaType: an index has "manifests", a manifest has "layers".
DocumentKind SniffDocumentKind(std::string_view json);
// BuildKit attestation manifests (vnd.docker.reference.type) and unknown/unknown platforms.
bool IsAttestation(const Descriptor& descriptor);

// The architecture this binary runs on, in OCI terms ("amd64", "arm64").
std::string HostArchitecture();
// 2: linux/<host arch>; 1: no platform given; 0: another platform (never selected).
int PlatformScore(const std::optional<Platform>& platform);
std::string PlatformName(const std::optional<Platform>& platform);

// The names an index entry gives its image: io.containerd.image.name (full reference, as
// docker >= 25 writes it), else org.opencontainers.image.ref.name.
std::vector<std::string> DescriptorNames(const Descriptor& descriptor);

// Each fails with kInvalidArgument naming what is malformed. A null "manifests" in an index
// is an empty list (docker save of an image pulled by digest writes one, moby#47210).
Result<ImageIndex> ParseImageIndex(std::string_view json);
Result<ImageManifest> ParseImageManifest(std::string_view json);
Result<ParsedConfig> ParseImageConfig(std::string_view json);
Result<std::vector<DockerSaveEntry>> ParseDockerSaveManifest(std::string_view json);

// The config a `docker export` tarball gets, which has none: a default PATH, WorkingDir "/",
// root user, Cmd ["/bin/sh"], and its one diff_id, so the digest names the content.
std::string SynthesizeFlatConfig(const std::string& diff_id_hex);

}  // namespace sandbox::rootfs
