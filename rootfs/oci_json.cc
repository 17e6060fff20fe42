#include "rootfs/oci_json.h"

#include <nlohmann/json.hpp>

#include "rootfs/digest.h"
#include "runtime/base/json_parse.h"

namespace sandbox::rootfs {
namespace {

using Json = nlohmann::json;

// nlohmann's accessors throw on type mismatches; these never do (no exceptions leave rootfs/).
const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringOr(const Json& object, const char* key, const std::string& fallback = {}) {
  const Json* value = Member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : fallback;
}

Result<std::vector<std::string>> StringList(const Json& object, const char* key,
                                            std::string_view what) {
  std::vector<std::string> out;
  const Json* value = Member(object, key);
  if (value == nullptr || value->is_null()) return out;
  if (!value->is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "{}: '{}' is not a list", what, key);
  }
  for (const auto& item : *value) {
    if (!item.is_string()) {
      return Fail(ErrorCode::kInvalidArgument, "{}: '{}' holds a non-string", what, key);
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

// Image documents come from archives anyone can build: depth is bounded (json_parse.h).
Result<Json> ParseObject(std::string_view text, std::string_view what) {
  auto parsed = ParseJsonBounded(text);
  if (!parsed) return Fail(std::move(parsed.error()).Context(what));
  Json json = std::move(*parsed);
  if (!json.is_object()) return Fail(ErrorCode::kInvalidArgument, "{} is not a JSON object", what);
  return json;
}

Result<Descriptor> ParseDescriptor(const Json& json, std::string_view what) {
  if (!json.is_object()) return Fail(ErrorCode::kInvalidArgument, "{}: not an object", what);
  Descriptor descriptor;
  descriptor.media_type = StringOr(json, "mediaType");
  auto hex = ParseSha256Digest(StringOr(json, "digest"));
  if (!hex) return Fail(std::move(hex.error()).Context(what));
  descriptor.digest_hex = std::move(*hex);
  if (const Json* size = Member(json, "size"); size != nullptr && size->is_number_integer()) {
    descriptor.size = size->get<int64_t>();
    if (descriptor.size < 0) return Fail(ErrorCode::kInvalidArgument, "{}: negative size", what);
  }
  if (const Json* platform = Member(json, "platform");
      platform != nullptr && platform->is_object()) {
    descriptor.platform = Platform{StringOr(*platform, "os"), StringOr(*platform, "architecture"),
                                   StringOr(*platform, "variant")};
  }
  if (const Json* annotations = Member(json, "annotations");
      annotations != nullptr && annotations->is_object()) {
    for (const auto& [key, value] : annotations->items()) {
      if (value.is_string()) descriptor.annotations[key] = value.get<std::string>();
    }
  }
  return descriptor;
}

}  // namespace

bool IsIndexMediaType(std::string_view media_type) {
  return media_type == "application/vnd.oci.image.index.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.list.v2+json";
}

bool IsManifestMediaType(std::string_view media_type) {
  return media_type == "application/vnd.oci.image.manifest.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.v2+json";
}

DocumentKind SniffDocumentKind(std::string_view text) {
  auto parsed = ParseJsonBounded(text);
  if (!parsed) return DocumentKind::kUnknown;
  const Json& json = *parsed;
  if (Member(json, "manifests") != nullptr) return DocumentKind::kIndex;
  if (Member(json, "layers") != nullptr) return DocumentKind::kManifest;
  return DocumentKind::kUnknown;
}

bool IsAttestation(const Descriptor& descriptor) {
  auto it = descriptor.annotations.find("vnd.docker.reference.type");
  if (it != descriptor.annotations.end() && it->second == "attestation-manifest") return true;
  return descriptor.platform && descriptor.platform->os == "unknown" &&
         descriptor.platform->architecture == "unknown";
}

std::string HostArchitecture() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#else
  return "unknown";
#endif
}

int PlatformScore(const std::optional<Platform>& platform) {
  if (!platform) return 1;
  if (platform->os.empty() && platform->architecture.empty()) return 1;
  return platform->os == "linux" && platform->architecture == HostArchitecture() ? 2 : 0;
}

std::string PlatformName(const std::optional<Platform>& platform) {
  if (!platform) return "(no platform)";
  std::string name = platform->os + "/" + platform->architecture;
  if (!platform->variant.empty()) name += "/" + platform->variant;
  return name;
}

std::vector<std::string> DescriptorNames(const Descriptor& descriptor) {
  for (const char* key : {"io.containerd.image.name", "org.opencontainers.image.ref.name"}) {
    auto it = descriptor.annotations.find(key);
    if (it != descriptor.annotations.end() && !it->second.empty()) return {it->second};
  }
  return {};
}

Result<ImageIndex> ParseImageIndex(std::string_view text) {
  SBX_ASSIGN_OR_RETURN(Json json, ParseObject(text, "image index"));
  ImageIndex index;
  const Json* manifests = Member(json, "manifests");
  if (manifests == nullptr || manifests->is_null()) return index;
  if (!manifests->is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "image index: 'manifests' is not a list");
  }
  for (const auto& item : *manifests) {
    SBX_ASSIGN_OR_RETURN(auto descriptor, ParseDescriptor(item, "image index entry"));
    index.manifests.push_back(std::move(descriptor));
  }
  return index;
}

Result<ImageManifest> ParseImageManifest(std::string_view text) {
  SBX_ASSIGN_OR_RETURN(Json json, ParseObject(text, "image manifest"));
  ImageManifest manifest;
  const Json* config = Member(json, "config");
  if (config == nullptr) return Fail(ErrorCode::kInvalidArgument, "image manifest has no config");
  SBX_ASSIGN_OR_RETURN(manifest.config, ParseDescriptor(*config, "manifest config"));
  const Json* layers = Member(json, "layers");
  if (layers == nullptr || !layers->is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "image manifest has no 'layers' list");
  }
  for (const auto& item : *layers) {
    SBX_ASSIGN_OR_RETURN(auto descriptor, ParseDescriptor(item, "manifest layer"));
    manifest.layers.push_back(std::move(descriptor));
  }
  return manifest;
}

Result<ParsedConfig> ParseImageConfig(std::string_view text) {
  SBX_ASSIGN_OR_RETURN(Json json, ParseObject(text, "image config"));
  ParsedConfig parsed;
  parsed.created = StringOr(json, "created");
  parsed.config.architecture = StringOr(json, "architecture", parsed.config.architecture);
  parsed.config.os = StringOr(json, "os", parsed.config.os);
  if (const Json* config = Member(json, "config"); config != nullptr && config->is_object()) {
    SBX_ASSIGN_OR_RETURN(parsed.config.env, StringList(*config, "Env", "image config"));
    SBX_ASSIGN_OR_RETURN(parsed.config.entrypoint,
                         StringList(*config, "Entrypoint", "image config"));
    SBX_ASSIGN_OR_RETURN(parsed.config.cmd, StringList(*config, "Cmd", "image config"));
    parsed.config.working_dir = StringOr(*config, "WorkingDir");
    parsed.config.user = StringOr(*config, "User");
  }
  const Json* rootfs = Member(json, "rootfs");
  if (rootfs == nullptr) return Fail(ErrorCode::kInvalidArgument, "image config has no rootfs");
  SBX_ASSIGN_OR_RETURN(auto diff_ids, StringList(*rootfs, "diff_ids", "image config rootfs"));
  for (const auto& diff_id : diff_ids) {
    SBX_ASSIGN_OR_RETURN(auto hex, ParseSha256Digest(diff_id));
    parsed.diff_id_hexes.push_back(std::move(hex));
  }
  return parsed;
}

Result<std::vector<DockerSaveEntry>> ParseDockerSaveManifest(std::string_view text) {
  auto parsed = ParseJsonBounded(text);
  if (!parsed) return Fail(std::move(parsed.error()).Context("manifest.json"));
  Json json = std::move(*parsed);
  if (!json.is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "manifest.json is not a JSON list");
  }
  std::vector<DockerSaveEntry> entries;
  for (const auto& item : json) {
    DockerSaveEntry entry;
    entry.config = StringOr(item, "Config");
    if (entry.config.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "manifest.json: an entry has no Config");
    }
    SBX_ASSIGN_OR_RETURN(entry.repo_tags, StringList(item, "RepoTags", "manifest.json"));
    SBX_ASSIGN_OR_RETURN(entry.layers, StringList(item, "Layers", "manifest.json"));
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::string SynthesizeFlatConfig(const std::string& diff_id_hex) {
  Json config = {
      {"architecture", HostArchitecture()},
      {"os", "linux"},
      {"config",
       {{"Env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
        {"WorkingDir", "/"},
        {"User", ""},
        {"Cmd", {"/bin/sh"}}}},
      {"rootfs", {{"type", "layers"}, {"diff_ids", {Sha256Digest(diff_id_hex)}}}},
      {"history", {{{"created_by", "mcp-sandbox image import (flat root filesystem)"}}}},
  };
  // std::map-backed objects: keys sorted, so the same content gives the same digest.
  return config.dump();
}

}  // namespace sandbox::rootfs
