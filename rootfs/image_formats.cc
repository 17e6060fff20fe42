#include "rootfs/image_formats.h"

#include <optional>

#include <spdlog/spdlog.h>

#include "rootfs/digest.h"

namespace sandbox::rootfs {
namespace {

constexpr uint64_t kMaxJsonBytes = 8 << 20;
constexpr int kMaxIndexDepth = 4;

std::string BlobName(const std::string& hex) { return "blobs/sha256/" + hex; }

// The hex digest a docker-save path names, if any: "blobs/sha256/<hex>" (>= v25) or
// "<hex>.json" (the legacy config).
std::string DigestNamedByPath(const std::string& path) {
  std::string name = NormalizeMemberName(path);
  constexpr std::string_view kBlobs = "blobs/sha256/";
  if (name.compare(0, kBlobs.size(), kBlobs) == 0) {
    std::string hex = name.substr(kBlobs.size());
    return IsSha256Hex(hex) ? hex : "";
  }
  constexpr std::string_view kJson = ".json";
  if (name.size() == 64 + kJson.size() && name.compare(64, kJson.size(), kJson) == 0 &&
      IsSha256Hex(std::string_view(name).substr(0, 64))) {
    return name.substr(0, 64);
  }
  return "";
}

Result<std::string> ReadVerifiedBlob(const ImageSource& source, const Descriptor& descriptor,
                                     std::string_view what) {
  auto content = source.ReadSmall(BlobName(descriptor.digest_hex), kMaxJsonBytes);
  if (!content) {
    if (content.error().code == ErrorCode::kNotFound) {
      return Fail(ErrorCode::kNotFound, "blob sha256:{} ({}) is missing from {}",
                  descriptor.digest_hex, what, source.path());
    }
    return Fail(std::move(content.error()).Context(what));
  }
  if (descriptor.size >= 0 && content->size() != static_cast<uint64_t>(descriptor.size)) {
    return Fail(ErrorCode::kInvalidArgument, "{} sha256:{}: size {} but the descriptor says {}",
                what, descriptor.digest_hex, content->size(), descriptor.size);
  }
  std::string actual = Sha256Hex(*content);
  if (actual != descriptor.digest_hex) {
    return Fail(ErrorCode::kInvalidArgument,
                "{}: digest mismatch: expected sha256:{}, got sha256:{}", what,
                descriptor.digest_hex, actual);
  }
  return content;
}

// The config must be for a platform this host runs (an index may not say).
Status CheckConfigPlatform(const ParsedConfig& config) {
  const ImageConfig& c = config.config;
  if ((!c.os.empty() && c.os != "linux") ||
      (!c.architecture.empty() && c.architecture != HostArchitecture())) {
    return Fail(ErrorCode::kInvalidArgument, "the image is for {}/{}, this host runs linux/{}",
                c.os, c.architecture, HostArchitecture());
  }
  return {};
}

Status CheckLayerCount(const ParsedConfig& config, size_t layers) {
  if (config.diff_id_hexes.size() != layers) {
    return Fail(ErrorCode::kInvalidArgument,
                "the config lists {} diff_ids but the manifest has {} layers",
                config.diff_id_hexes.size(), layers);
  }
  return {};
}

bool HasName(const std::vector<std::string>& names, const std::string& wanted) {
  for (const auto& name : names) {
    if (name == wanted) return true;
  }
  return false;
}

struct Candidate {
  Descriptor manifest;
  std::vector<std::string> names;
};

struct CandidateSearch {
  const ImageSource& source;
  std::vector<Candidate> found;
  std::vector<std::string> notes;  // why branches were skipped, for the error message

  Status Collect(const std::vector<Descriptor>& descriptors,
                 const std::vector<std::string>& inherited_names, int depth) {
    if (depth > kMaxIndexDepth) {
      return Fail(ErrorCode::kInvalidArgument, "image indexes nested deeper than {}",
                  kMaxIndexDepth);
    }
    for (const auto& descriptor : descriptors) {
      if (IsAttestation(descriptor)) continue;
      std::vector<std::string> names = DescriptorNames(descriptor);
      if (names.empty()) names = inherited_names;
      bool is_index = IsIndexMediaType(descriptor.media_type);
      std::optional<std::string> content;
      if (!is_index && !IsManifestMediaType(descriptor.media_type)) {
        // No (or an unknown) media type: look at the document itself.
        auto read = ReadVerifiedBlob(source, descriptor, "index entry");
        if (!read) {
          if (read.error().code != ErrorCode::kNotFound) return Fail(std::move(read.error()));
          notes.push_back(read.error().message);
          continue;
        }
        DocumentKind kind = SniffDocumentKind(*read);
        if (kind == DocumentKind::kUnknown) {
          notes.push_back("index entry sha256:" + descriptor.digest_hex + " is not an image");
          continue;
        }
        is_index = kind == DocumentKind::kIndex;
        content = std::move(*read);
      }
      if (!is_index) {
        found.push_back(Candidate{descriptor, names});
        continue;
      }
      if (PlatformScore(descriptor.platform) == 0) continue;
      if (!content) {
        auto read = ReadVerifiedBlob(source, descriptor, "nested image index");
        if (!read) {
          // A branch we might not even need: only fail if nothing else is found.
          if (read.error().code != ErrorCode::kNotFound) return Fail(std::move(read.error()));
          notes.push_back(read.error().message);
          continue;
        }
        content = std::move(*read);
      }
      SBX_ASSIGN_OR_RETURN(ImageIndex nested, ParseImageIndex(*content));
      SBX_TRY(Collect(nested.manifests, names, depth + 1));
    }
    return {};
  }
};

std::string JoinNotes(const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& note : notes) out += "; " + note;
  return out;
}

// nullopt: the index lists no image at all (then docker save's manifest.json may still).
// `notes` says why, for the error message.
Result<std::optional<ResolvedImage>> ResolveOciLayout(const ImageSource& source,
                                                      const std::string& preferred_name,
                                                      std::string* notes) {
  SBX_ASSIGN_OR_RETURN(std::string index_json, source.ReadSmall("index.json", kMaxJsonBytes));
  SBX_ASSIGN_OR_RETURN(ImageIndex index, ParseImageIndex(index_json));
  CandidateSearch search{source, {}, {}};
  SBX_TRY(search.Collect(index.manifests, {}, 0));
  if (search.found.empty()) {
    *notes = JoinNotes(search.notes);
    return std::optional<ResolvedImage>();
  }

  const Candidate* best = nullptr;
  bool name_matched = false;
  std::vector<std::string> platforms;
  for (const auto& candidate : search.found) {
    int score = PlatformScore(candidate.manifest.platform);
    platforms.push_back(PlatformName(candidate.manifest.platform));
    if (score == 0) continue;
    bool matches = !preferred_name.empty() && HasName(candidate.names, preferred_name);
    if (best == nullptr || (matches && !name_matched) ||
        (matches == name_matched && score > PlatformScore(best->manifest.platform))) {
      best = &candidate;
      name_matched = matches;
    }
  }
  if (best == nullptr) {
    std::string listed;
    for (const auto& platform : platforms) listed += (listed.empty() ? "" : ", ") + platform;
    return Fail(ErrorCode::kNotFound, "no linux/{} image in {} (it has: {}){}", HostArchitecture(),
                source.path(), listed, JoinNotes(search.notes));
  }

  ResolvedImage image;
  image.format = ImageFormat::kOciLayout;
  image.names = best->names;
  std::string what = "manifest of the " + PlatformName(best->manifest.platform) + " image";
  SBX_ASSIGN_OR_RETURN(std::string manifest_json, ReadVerifiedBlob(source, best->manifest, what));
  SBX_ASSIGN_OR_RETURN(ImageManifest manifest, ParseImageManifest(manifest_json));
  SBX_ASSIGN_OR_RETURN(image.config_json,
                       ReadVerifiedBlob(source, manifest.config, "image config"));
  image.config_hex = manifest.config.digest_hex;
  SBX_ASSIGN_OR_RETURN(image.config, ParseImageConfig(image.config_json));
  SBX_TRY(CheckConfigPlatform(image.config));
  SBX_TRY(CheckLayerCount(image.config, manifest.layers.size()));
  for (size_t i = 0; i < manifest.layers.size(); ++i) {
    const Descriptor& layer = manifest.layers[i];
    auto blob = source.Find(BlobName(layer.digest_hex));
    if (!blob) {
      return Fail(std::move(blob.error())
                      .Context(fmt::format("layer {} of {} (sha256:{})", i + 1,
                                           manifest.layers.size(), layer.digest_hex)));
    }
    if (layer.size >= 0 && blob->size != static_cast<uint64_t>(layer.size)) {
      return Fail(ErrorCode::kInvalidArgument, "layer sha256:{}: size {} but the manifest says {}",
                  layer.digest_hex, blob->size, layer.size);
    }
    image.layers.push_back(LayerToApply{*blob, BlobName(layer.digest_hex), layer.digest_hex,
                                        image.config.diff_id_hexes[i]});
  }
  // docker save >= v25 also writes manifest.json, whose RepoTags are the docker-style names.
  if (source.Exists("manifest.json")) {
    auto save_json = source.ReadSmall("manifest.json", kMaxJsonBytes);
    auto entries = save_json ? ParseDockerSaveManifest(*save_json)
                             : Result<std::vector<DockerSaveEntry>>(std::vector<DockerSaveEntry>{});
    if (entries) {
      for (const auto& entry : *entries) {
        if (DigestNamedByPath(entry.config) == image.config_hex && !entry.repo_tags.empty()) {
          image.names = entry.repo_tags;
        }
      }
    }
  }
  if (search.found.size() > 1) {
    spdlog::debug("{}: {} candidate manifests; selected sha256:{}", source.path(),
                  search.found.size(), best->manifest.digest_hex);
  }
  return std::optional<ResolvedImage>(std::move(image));
}

Result<ResolvedImage> ResolveDockerSave(const ImageSource& source,
                                        const std::string& preferred_name) {
  SBX_ASSIGN_OR_RETURN(std::string save_json, source.ReadSmall("manifest.json", kMaxJsonBytes));
  SBX_ASSIGN_OR_RETURN(auto entries, ParseDockerSaveManifest(save_json));
  if (entries.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "manifest.json of {} lists no image", source.path());
  }
  const DockerSaveEntry* chosen = &entries.front();
  for (const auto& entry : entries) {
    if (!preferred_name.empty() && HasName(entry.repo_tags, preferred_name)) chosen = &entry;
  }
  if (entries.size() > 1) {
    spdlog::warn("{} holds {} images; importing {}", source.path(), entries.size(),
                 chosen->repo_tags.empty() ? chosen->config : chosen->repo_tags.front());
  }

  ResolvedImage image;
  image.format = ImageFormat::kDockerSave;
  image.names = chosen->repo_tags;
  SBX_ASSIGN_OR_RETURN(image.config_json, source.ReadSmall(chosen->config, kMaxJsonBytes));
  image.config_hex = Sha256Hex(image.config_json);
  if (std::string named = DigestNamedByPath(chosen->config);
      !named.empty() && named != image.config_hex) {
    return Fail(ErrorCode::kInvalidArgument,
                "image config {}: digest mismatch: expected sha256:{}, got sha256:{}",
                chosen->config, named, image.config_hex);
  }
  SBX_ASSIGN_OR_RETURN(image.config, ParseImageConfig(image.config_json));
  SBX_TRY(CheckConfigPlatform(image.config));
  SBX_TRY(CheckLayerCount(image.config, chosen->layers.size()));
  for (size_t i = 0; i < chosen->layers.size(); ++i) {
    const std::string& path = chosen->layers[i];
    auto blob = source.Find(path);
    if (!blob) {
      return Fail(std::move(blob.error())
                      .Context(fmt::format("layer {} of {}", i + 1, chosen->layers.size())));
    }
    image.layers.push_back(
        LayerToApply{*blob, path, DigestNamedByPath(path), image.config.diff_id_hexes[i]});
  }
  return image;
}

Result<ResolvedImage> ResolveFlatRootfs(const ImageSource& source) {
  ResolvedImage image;
  image.format = ImageFormat::kFlatRootfs;
  FileSection tar = source.WholeTar();
  // The content's digest goes into the synthesized config, so the same export always lands
  // on the same stored image and different ones never collide.
  SBX_ASSIGN_OR_RETURN(std::string diff_id, HashSection(tar));
  image.config_json = SynthesizeFlatConfig(diff_id);
  image.config_hex = Sha256Hex(image.config_json);
  SBX_ASSIGN_OR_RETURN(image.config, ParseImageConfig(image.config_json));
  image.layers.push_back(LayerToApply{tar, "root filesystem", "", diff_id});
  return image;
}

}  // namespace

std::string_view ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kOciLayout:
      return "oci-layout";
    case ImageFormat::kDockerSave:
      return "docker-save";
    case ImageFormat::kFlatRootfs:
      return "docker-export";
  }
  return "unknown";
}

Result<ResolvedImage> ResolveImage(const ImageSource& source, const std::string& preferred_name) {
  if (source.Exists("oci-layout") && source.Exists("index.json")) {
    std::string notes;
    SBX_ASSIGN_OR_RETURN(auto image, ResolveOciLayout(source, preferred_name, &notes));
    if (image) return std::move(*image);
    if (!source.Exists("manifest.json")) {
      return Fail(ErrorCode::kNotFound, "index.json of {} lists no image{}", source.path(), notes);
    }
    return ResolveDockerSave(source, preferred_name);
  }
  if (source.Exists("manifest.json")) return ResolveDockerSave(source, preferred_name);
  if (!source.is_directory() && source.LooksLikeRootfs()) return ResolveFlatRootfs(source);
  return Fail(ErrorCode::kInvalidArgument,
              "{} is not an image: no oci-layout and index.json (OCI), no manifest.json (docker "
              "save), and no bin/, usr/ or etc/ at the top (docker export)",
              source.path());
}

}  // namespace sandbox::rootfs
