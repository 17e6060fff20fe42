// What to import from an ImageSource: detects the format and resolves it to one config and
// its ordered layers, with the digests each must have.
//   OCI image layout (oci-layout + index.json): nested indexes followed; the linux/<host arch>
//     manifest selected; attestation manifests skipped; only the selected image's blobs are
//     ever opened, so blobs missing for other platforms do not matter.
//   docker save >= v25: the same layout plus manifest.json (whose RepoTags name the image);
//     when index.json lists nothing usable (moby#47210, moby#51389), manifest.json is used.
//   docker save <= v24 (manifest.json, "<id>/layer.tar"): no blob digests, diff_ids only.
//   docker export (a flat root filesystem tar): a config is synthesized (oci_json.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rootfs/archive_reader.h"
#include "rootfs/image_source.h"
#include "rootfs/oci_json.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

enum class ImageFormat { kOciLayout, kDockerSave, kFlatRootfs };
std::string_view ImageFormatName(ImageFormat format);

struct LayerToApply {
  FileSection blob;
  std::string label;        // for messages: "blobs/sha256/<hex>", "<id>/layer.tar"
  std::string blob_hex;     // expected sha256 of the stored bytes; "" when the format has none
  std::string diff_id_hex;  // expected sha256 of the uncompressed tar (from the config)
};

struct ResolvedImage {
  ImageFormat format = ImageFormat::kOciLayout;
  std::string config_json;  // verified bytes
  std::string config_hex;   // their sha256: the image's identity in the store
  ParsedConfig config;
  std::vector<LayerToApply> layers;  // bottom first
  std::vector<std::string> names;    // tags the archive gives the image
};

// Resolves the image to import. With several images in one archive, `preferred_name` picks
// the one carrying that tag; otherwise the first is taken (and the others named in a warning).
// Digests of the index, manifest and config are checked here; layer digests while they are
// applied. Missing selected blobs fail with kNotFound naming the blob.
Result<ResolvedImage> ResolveImage(const ImageSource& source, const std::string& preferred_name);

}  // namespace sandbox::rootfs
