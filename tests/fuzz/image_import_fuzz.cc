// Fuzz target: the image importer (rootfs/store.h), from the file on disk to the unpacked tree
// in a store of its own. The first input byte picks the mode:
//   even: the rest is the archive handed to `image import`: an OCI layout tar, a docker save
//         (legacy or >= v25), a docker export, compressed or not;
//   odd:  the rest is the layers of an image, split at "#LAYER#\n", each a layer blob (tar,
//         gzip or zstd, whiteouts included) that this target wraps into an OCI layout
//         directory with correct digests and diff_ids, so mutations get past the digest
//         checks into the layer extraction instead of stopping at a mismatch.
// Invariants: nothing crashes; an import that fails leaves no image and no temp directory
// in the store; one that succeeds yields a tree that lists.
#include <archive.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "rootfs/digest.h"
#include "rootfs/store.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string& WorkDir() {
  static const std::string dir = [] {
    spdlog::set_level(spdlog::level::off);
    char path[] = "/tmp/mcp-sandbox-fuzz-import-XXXXXX";
    if (mkdtemp(path) == nullptr) throw std::runtime_error("mkdtemp failed");
    return std::string(path);
  }();
  return dir;
}

void WriteFile(const fs::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// The blob uncompressed (gzip, zstd, xz... as libarchive sniffs them), for its diff_id; the
// blob itself when it is not compressed or does not decompress.
std::string Uncompressed(std::string_view blob) {
  struct archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_raw(a);
  std::string out;
  struct archive_entry* entry = nullptr;
  if (archive_read_open_memory(a, blob.data(), blob.size()) == ARCHIVE_OK &&
      archive_read_next_header(a, &entry) == ARCHIVE_OK) {
    char buf[65536];
    la_ssize_t n = 0;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0 && out.size() < (64u << 20)) {
      out.append(buf, static_cast<size_t>(n));
    }
    if (n < 0) out = std::string(blob);
  } else {
    out = std::string(blob);
  }
  archive_read_free(a);
  return out;
}

Json Descriptor(const char* media_type, std::string_view data, const std::string& hex) {
  return {{"mediaType", media_type},
          {"digest", sandbox::rootfs::Sha256Digest(hex)},
          {"size", data.size()}};
}

std::string AddBlob(const fs::path& layout, std::string_view data) {
  std::string hex = sandbox::rootfs::Sha256Hex(data);
  WriteFile(layout / "blobs" / "sha256" / hex, data);
  return hex;
}

// An OCI layout directory of an image made of `layers`, every digest right.
void WriteLayout(const fs::path& layout, const std::vector<std::string_view>& layers) {
  fs::create_directories(layout / "blobs" / "sha256");
  WriteFile(layout / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  Json diff_ids = Json::array();
  Json descriptors = Json::array();
  for (std::string_view blob : layers) {
    diff_ids.push_back(
        sandbox::rootfs::Sha256Digest(sandbox::rootfs::Sha256Hex(Uncompressed(blob))));
    descriptors.push_back(
        Descriptor("application/vnd.oci.image.layer.v1.tar", blob, AddBlob(layout, blob)));
  }
  std::string config = Json{{"architecture", "amd64"},
                            {"os", "linux"},
                            {"config", {{"Env", {"PATH=/usr/bin:/bin"}}}},
                            {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}}
                           .dump();
  std::string config_hex = AddBlob(layout, config);
  std::string manifest = Json{
      {"schemaVersion", 2},
      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
      {"config", Descriptor("application/vnd.oci.image.config.v1+json", config, config_hex)},
      {"layers",
       descriptors}}.dump();
  std::string manifest_hex = AddBlob(layout, manifest);
  Json top = Descriptor("application/vnd.oci.image.manifest.v1+json", manifest, manifest_hex);
  top["annotations"] = {{"org.opencontainers.image.ref.name", "fuzz:1"}};
  WriteFile(layout / "index.json", Json{{"schemaVersion", 2},
                                        {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                        {"manifests", {top}}}
                                       .dump());
}

std::vector<std::string_view> SplitLayers(std::string_view rest) {
  constexpr std::string_view kMarker = "#LAYER#\n";
  std::vector<std::string_view> layers;
  for (;;) {
    size_t at = rest.find(kMarker);
    layers.push_back(rest.substr(0, at));
    if (at == std::string_view::npos || layers.size() == 8) break;
    rest.remove_prefix(at + kMarker.size());
  }
  return layers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const fs::path work = WorkDir();
  const fs::path state = work / "state";
  const fs::path input = work / "input";
  std::error_code ec;
  fs::remove_all(state, ec);
  fs::remove_all(input, ec);
  fs::create_directories(state);

  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string source;
  if (data[0] % 2 == 0) {
    source = input.string() + ".tar";
    WriteFile(source, rest);
  } else {
    source = input.string();
    WriteLayout(input, SplitLayers(rest));
  }

  sandbox::rootfs::ImageStore store(state.string());
  sandbox::rootfs::ImportOptions options;
  options.name = "fuzz";
  // Small caps: an input may not make the fuzzer write gigabytes.
  options.max_total_bytes = 64u << 20;
  options.max_file_bytes = 16u << 20;
  options.max_entries = 20'000;
  auto imported = store.Import(source, options);
  auto listed = store.List();
  FUZZ_CHECK(listed.has_value());
  if (imported) {
    FUZZ_CHECK(listed->size() == 1);
    FUZZ_CHECK(fs::is_directory(imported->rootfs));
  } else {
    FUZZ_CHECK(listed->empty());
    // Nothing half-imported: no image directory, no staging or spool directory left.
    size_t leftovers = 0;
    for (const auto& entry : fs::directory_iterator(state / "images", ec)) {
      std::string name = entry.path().filename().string();
      if (name.size() == 64 || name.rfind(".tmp-", 0) == 0) ++leftovers;
    }
    FUZZ_CHECK(leftovers == 0);
  }
  fs::remove_all(state, ec);
  return 0;
}
