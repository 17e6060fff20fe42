#include "rootfs/recipe/oci_documents.h"

#include <nlohmann/json.hpp>

namespace sandbox::rootfs {
namespace {

using nlohmann::json;

json DescriptorJson(std::string_view media_type, const Blob& blob) {
  return {{"mediaType", media_type}, {"digest", "sha256:" + blob.hex}, {"size", blob.size}};
}

// "docker.io/mcp-sandbox/python:latest": the normalized form containerd and docker >= 25 use.
std::string FullReference(std::string_view reference) {
  return "docker.io/" + std::string(reference);
}

std::string_view TagOf(std::string_view reference) {
  auto colon = reference.rfind(':');
  auto slash = reference.rfind('/');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && colon < slash)) {
    return "latest";
  }
  return reference.substr(colon + 1);
}

}  // namespace

std::string DockerReference(std::string_view image_name) {
  return "mcp-sandbox/" + std::string(image_name) + ":latest";
}

std::string ImageConfigJson(const ConfigInputs& inputs) {
  const Recipe& recipe = *inputs.recipe;
  json labels = json::object();
  for (const auto& [key, value] : inputs.labels) labels[key] = value;
  json config = {
      {"User", recipe.user}, {"Env", recipe.env}, {"WorkingDir", recipe.working_dir},
      {"Cmd", recipe.cmd},   {"Labels", labels},
  };
  json history = {
      {"created", inputs.created},
      {"created_by", "mcp-sandbox image build --variant " +
                         std::string(ImageVariantName(recipe.variant)) + " --suite " +
                         recipe.suite + " (mmdebstrap)"},
  };
  json doc = {
      {"created", inputs.created},
      {"architecture", inputs.architecture},
      {"os", "linux"},
      {"config", config},
      {"rootfs", {{"type", "layers"}, {"diff_ids", json::array({"sha256:" + inputs.diff_id_hex})}}},
      {"history", json::array({history})},
  };
  return doc.dump();
}

std::string ImageManifestJson(const Blob& config, const Blob& layer) {
  json doc = {
      {"schemaVersion", 2},
      {"mediaType", kOciManifestMediaType},
      {"config", DescriptorJson(kOciConfigMediaType, config)},
      {"layers", json::array({DescriptorJson(kOciLayerMediaType, layer)})},
  };
  return doc.dump();
}

std::string ImageIndexJson(const Blob& manifest, std::string_view reference) {
  json entry = DescriptorJson(kOciManifestMediaType, manifest);
  entry["annotations"] = {
      {"io.containerd.image.name", FullReference(reference)},
      {"org.opencontainers.image.ref.name", TagOf(reference)},
  };
  json doc = {
      {"schemaVersion", 2},
      {"mediaType", "application/vnd.oci.image.index.v1+json"},
      {"manifests", json::array({entry})},
  };
  return doc.dump();
}

std::string DockerSaveManifestJson(const Blob& config, const Blob& layer,
                                   std::string_view reference) {
  json entry = {
      {"Config", "blobs/sha256/" + config.hex},
      {"RepoTags", json::array({reference})},
      {"Layers", json::array({"blobs/sha256/" + layer.hex})},
  };
  json doc = json::array({entry});
  return doc.dump();
}

}  // namespace sandbox::rootfs
