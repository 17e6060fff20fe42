// The JSON documents of the OCI image archive the recipe writes: the image config, the
// manifest, index.json, oci-layout, and docker save's manifest.json. Pure: strings in, strings
// out. References: opencontainers/image-spec config.md, manifest.md, image-index.md,
// image-layout.md, annotations.md; moby image/spec/v1.2.md for manifest.json.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "rootfs/recipe/recipe.h"

namespace sandbox::rootfs {

inline constexpr std::string_view kOciLayoutJson = R"({"imageLayoutVersion":"1.0.0"})";
inline constexpr std::string_view kOciManifestMediaType =
    "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciConfigMediaType = "application/vnd.oci.image.config.v1+json";
// Uncompressed: the archive stays on this host (store import, docker load over a unix socket),
// where skipping gzip makes the build ~15 s and every import ~3x faster for ~400 MB of disk.
inline constexpr std::string_view kOciLayerMediaType = "application/vnd.oci.image.layer.v1.tar";

// A blob of the archive: the hex SHA-256 of its bytes and their count.
struct Blob {
  std::string hex;
  uint64_t size = 0;
};

struct ConfigInputs {
  const Recipe* recipe = nullptr;
  std::string architecture;  // OCI name: "amd64", "arm64"
  std::string created;       // RFC 3339 UTC
  std::string diff_id_hex;   // SHA-256 of the uncompressed layer tar
  std::map<std::string, std::string> labels;
};

// The image config: platform, User, Env, WorkingDir, Cmd, Labels, rootfs.diff_ids, history.
std::string ImageConfigJson(const ConfigInputs& inputs);
// A one-layer OCI image manifest.
std::string ImageManifestJson(const Blob& config, const Blob& layer);
// index.json naming the manifest the way docker >= 25 does: io.containerd.image.name holds the
// full reference ("docker.io/mcp-sandbox/python:latest"), org.opencontainers.image.ref.name the
// tag ("latest"). `reference` is "mcp-sandbox/python:latest".
std::string ImageIndexJson(const Blob& manifest, std::string_view reference);
// docker save's manifest.json (what docker load before v25 reads), pointing into blobs/sha256.
std::string DockerSaveManifestJson(const Blob& config, const Blob& layer,
                                   std::string_view reference);

// "mcp-sandbox/<name>:latest", the tag docker load gives the image.
std::string DockerReference(std::string_view image_name);

}  // namespace sandbox::rootfs
