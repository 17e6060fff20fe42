#include "tests/rootfs/archive_fixture.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "rootfs/digest.h"
#include "runtime/base/files.h"

namespace sandbox::testing {
namespace {

using Json = nlohmann::json;

struct WriterDeleter {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ReaderDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

la_ssize_t AppendToString(archive*, void* client, const void* buffer, size_t length) {
  static_cast<std::string*>(client)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

void Check(archive* a, int r, const char* what) {
  if (r < ARCHIVE_WARN) {
    FAIL(what << ": " << (archive_error_string(a) ? archive_error_string(a) : "?"));
  }
}

}  // namespace

TarEntry File(std::string name, std::string data, mode_t mode) {
  TarEntry e;
  e.name = std::move(name);
  e.data = std::move(data);
  e.mode = mode;
  return e;
}

TarEntry Dir(std::string name, mode_t mode, int64_t uid) {
  TarEntry e;
  e.name = std::move(name);
  e.kind = TarEntry::Kind::kDir;
  e.mode = mode;
  e.uid = uid;
  return e;
}

TarEntry Symlink(std::string name, std::string target) {
  TarEntry e;
  e.name = std::move(name);
  e.kind = TarEntry::Kind::kSymlink;
  e.link = std::move(target);
  e.mode = 0777;
  return e;
}

TarEntry Hardlink(std::string name, std::string target) {
  TarEntry e;
  e.name = std::move(name);
  e.kind = TarEntry::Kind::kHardlink;
  e.link = std::move(target);
  return e;
}

TarEntry Special(std::string name, TarEntry::Kind kind) {
  TarEntry e;
  e.name = std::move(name);
  e.kind = kind;
  return e;
}

std::string MakeTar(const std::vector<TarEntry>& entries) {
  std::string out;
  std::unique_ptr<archive, WriterDeleter> a(archive_write_new());
  // Restricted pax (extended headers only where needed) unless an entry carries an atime,
  // which only full pax headers keep.
  bool any_atime = false;
  for (const auto& e : entries) any_atime |= e.atime.has_value();
  if (any_atime) {
    archive_write_set_format_pax(a.get());
  } else {
    archive_write_set_format_pax_restricted(a.get());
  }
  archive_write_add_filter_none(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  Check(a.get(), archive_write_open(a.get(), &out, nullptr, AppendToString, nullptr), "open");
  for (const auto& e : entries) {
    std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
    archive_entry_set_pathname(entry.get(), e.name.c_str());
    archive_entry_set_mtime(entry.get(), e.mtime, 0);
    archive_entry_set_perm(entry.get(), e.mode);
    archive_entry_set_uid(entry.get(), e.uid);
    archive_entry_set_gid(entry.get(), e.uid);
    if (!e.uname.empty()) archive_entry_set_uname(entry.get(), e.uname.c_str());
    if (e.atime) archive_entry_set_atime(entry.get(), *e.atime, 0);
    switch (e.kind) {
      case TarEntry::Kind::kFile:
        archive_entry_set_filetype(entry.get(), AE_IFREG);
        archive_entry_set_size(entry.get(), static_cast<la_int64_t>(e.data.size()));
        break;
      case TarEntry::Kind::kDir:
        archive_entry_set_filetype(entry.get(), AE_IFDIR);
        break;
      case TarEntry::Kind::kSymlink:
        archive_entry_set_filetype(entry.get(), AE_IFLNK);
        archive_entry_set_symlink(entry.get(), e.link.c_str());
        break;
      case TarEntry::Kind::kHardlink:
        archive_entry_set_filetype(entry.get(), AE_IFREG);
        archive_entry_set_hardlink(entry.get(), e.link.c_str());
        break;
      case TarEntry::Kind::kCharDevice:
        archive_entry_set_filetype(entry.get(), AE_IFCHR);
        archive_entry_set_rdev(entry.get(), makedev(1, 3));
        break;
      case TarEntry::Kind::kBlockDevice:
        archive_entry_set_filetype(entry.get(), AE_IFBLK);
        archive_entry_set_rdev(entry.get(), makedev(8, 0));
        break;
      case TarEntry::Kind::kFifo:
        archive_entry_set_filetype(entry.get(), AE_IFIFO);
        break;
    }
    for (const auto& [key, value] : e.xattrs) {
      archive_entry_xattr_add_entry(entry.get(), key.c_str(), value.data(), value.size());
    }
    Check(a.get(), archive_write_header(a.get(), entry.get()), "write header");
    if (e.kind == TarEntry::Kind::kFile && !e.data.empty()) {
      REQUIRE(archive_write_data(a.get(), e.data.data(), e.data.size()) ==
              static_cast<la_ssize_t>(e.data.size()));
    }
  }
  Check(a.get(), archive_write_close(a.get()), "close");
  return out;
}

void WriteTar(const std::string& path, const std::vector<TarEntry>& entries) {
  WriteBytes(path, MakeTar(entries));
}

std::string Compress(const std::string& data, Codec codec) {
  if (codec == Codec::kNone) return data;
  std::string out;
  std::unique_ptr<archive, WriterDeleter> a(archive_write_new());
  archive_write_set_format_raw(a.get());
  Check(a.get(),
        codec == Codec::kGzip ? archive_write_add_filter_gzip(a.get())
                              : archive_write_add_filter_zstd(a.get()),
        "filter");
  archive_write_set_bytes_in_last_block(a.get(), 1);
  Check(a.get(), archive_write_open(a.get(), &out, nullptr, AppendToString, nullptr), "open");
  std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_pathname(entry.get(), "data");
  Check(a.get(), archive_write_header(a.get(), entry.get()), "header");
  size_t done = 0;
  while (done < data.size()) {
    la_ssize_t n = archive_write_data(a.get(), data.data() + done, data.size() - done);
    REQUIRE(n > 0);
    done += static_cast<size_t>(n);
  }
  Check(a.get(), archive_write_close(a.get()), "close");
  return out;
}

std::string Decompress(const std::string& data) {
  std::unique_ptr<archive, ReaderDeleter> a(archive_read_new());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_raw(a.get());
  Check(a.get(), archive_read_open_memory(a.get(), data.data(), data.size()), "open");
  archive_entry* entry = nullptr;
  Check(a.get(), archive_read_next_header(a.get(), &entry), "header");
  std::string out;
  char buffer[65536];
  for (;;) {
    la_ssize_t n = archive_read_data(a.get(), buffer, sizeof buffer);
    REQUIRE(n >= 0);
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

std::string Sha256Of(const std::string& data) { return rootfs::Sha256Hex(data); }

namespace {

std::string Blob(Layout& layout, const std::string& content) {
  std::string hex = Sha256Of(content);
  layout.files["blobs/sha256/" + hex] = content;
  return hex;
}

Json Descriptor(const std::string& media_type, const std::string& content, const std::string& hex) {
  return Json{{"mediaType", media_type}, {"digest", "sha256:" + hex}, {"size", content.size()}};
}

std::string ConfigJson(const ImageSpec& spec, const std::string& architecture) {
  Json diff_ids = Json::array();
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    std::string diff_id = Sha256Of(spec.layers[i]);
    if (spec.wrong_diff_id == i) diff_id = Sha256Of(spec.layers[i] + "x");
    diff_ids.push_back("sha256:" + diff_id);
  }
  Json config = {
      {"architecture", architecture},
      {"os", "linux"},
      {"created", "2024-01-02T03:04:05Z"},
      {"config",
       {{"Env", {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}},
        {"WorkingDir", "/work"},
        {"User", "1000:1000"},
        {"Cmd", {"python3"}}}},
      {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}},
  };
  return config.dump();
}

std::string LayerMediaType(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "application/vnd.oci.image.layer.v1.tar";
    case Codec::kGzip:
      return "application/vnd.oci.image.layer.v1.tar+gzip";
    case Codec::kZstd:
      return "application/vnd.oci.image.layer.v1.tar+zstd";
  }
  return "";
}

// Writes the manifest (and its config and layers) of one platform into the layout.
struct ManifestOut {
  Json descriptor;
  std::string config_hex;
  std::vector<std::string> layer_hexes;
};

ManifestOut AddManifest(Layout& layout, const ImageSpec& spec, const std::string& architecture,
                        bool with_blobs) {
  ManifestOut out;
  std::string config = ConfigJson(spec, architecture);
  out.config_hex = Sha256Of(config);
  if (with_blobs) layout.files["blobs/sha256/" + out.config_hex] = config;
  Json layers = Json::array();
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    std::string blob = Compress(spec.layers[i], spec.codec);
    std::string hex = Sha256Of(blob);
    layers.push_back(Descriptor(LayerMediaType(spec.codec), blob, hex));
    out.layer_hexes.push_back(hex);
    if (!with_blobs || spec.missing_blob == i) continue;
    if (spec.corrupt_blob == i) {
      // Same size, one byte different, still a valid tar: only the digest can tell.
      std::string corrupted = spec.layers[i];
      size_t pos = corrupted.find("payload");
      REQUIRE(pos != std::string::npos);
      corrupted[pos] = 'P';
      blob = Compress(corrupted, spec.codec);
    }
    layout.files["blobs/sha256/" + hex] = blob;
  }
  Json manifest = {
      {"schemaVersion", 2},
      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
      {"config", Descriptor("application/vnd.oci.image.config.v1+json", config, out.config_hex)},
      {"layers", layers},
  };
  std::string manifest_text = manifest.dump();
  std::string manifest_hex = Sha256Of(manifest_text);
  if (with_blobs) layout.files["blobs/sha256/" + manifest_hex] = manifest_text;
  out.descriptor =
      Descriptor("application/vnd.oci.image.manifest.v1+json", manifest_text, manifest_hex);
  return out;
}

}  // namespace

BuiltImage OciLayout(const ImageSpec& spec) {
  BuiltImage image;
  Layout& layout = image.layout;
  layout.files["oci-layout"] = R"({"imageLayoutVersion":"1.0.0"})";
  Json top;
  if (!spec.multi_platform) {
    ManifestOut manifest = AddManifest(layout, spec, spec.architecture, true);
    image.config_hex = manifest.config_hex;
    image.layer_hexes = manifest.layer_hexes;
    top = manifest.descriptor;
  } else {
    // As Docker 29's containerd store saves a multi-platform image: index -> nested index ->
    // per-platform manifests + attestations, with only the host platform's blobs present.
    ManifestOut amd64 = AddManifest(layout, spec, "amd64", true);
    ManifestOut arm64 = AddManifest(layout, spec, "arm64", false);
    image.config_hex = amd64.config_hex;
    image.layer_hexes = amd64.layer_hexes;
    amd64.descriptor["platform"] = {{"os", "linux"}, {"architecture", "amd64"}};
    arm64.descriptor["platform"] = {{"os", "linux"}, {"architecture", "arm64"}, {"variant", "v8"}};
    Json attestation = Descriptor("application/vnd.oci.image.manifest.v1+json", "missing",
                                  Sha256Of("attestation that is not in the layout"));
    attestation["platform"] = {{"os", "unknown"}, {"architecture", "unknown"}};
    attestation["annotations"] = {{"vnd.docker.reference.type", "attestation-manifest"}};
    Json nested = {{"schemaVersion", 2},
                   {"mediaType", "application/vnd.oci.image.index.v1+json"},
                   {"manifests", {arm64.descriptor, attestation, amd64.descriptor}}};
    std::string nested_text = nested.dump();
    std::string nested_hex = Blob(layout, nested_text);
    top = Descriptor("application/vnd.oci.image.index.v1+json", nested_text, nested_hex);
  }
  top["annotations"] = {{"org.opencontainers.image.ref.name", spec.ref_name}};
  Json index = {{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.index.v1+json"},
                {"manifests", {top}}};
  layout.files["index.json"] = index.dump();
  return image;
}

BuiltImage DockerSaveV25(const ImageSpec& spec) {
  BuiltImage image = OciLayout(spec);
  Json layers = Json::array();
  for (const auto& hex : image.layer_hexes) layers.push_back("blobs/sha256/" + hex);
  Json save = Json::array({{{"Config", "blobs/sha256/" + image.config_hex},
                            {"RepoTags", {spec.ref_name}},
                            {"Layers", layers}}});
  image.layout.files["manifest.json"] = save.dump();
  return image;
}

BuiltImage DockerSaveLegacy(const ImageSpec& spec, bool podman_links) {
  BuiltImage image;
  Layout& layout = image.layout;
  std::string config = ConfigJson(spec, spec.architecture);
  image.config_hex = Sha256Of(config);
  layout.files[image.config_hex + ".json"] = config;
  Json layers = Json::array();
  std::string parent;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    // Legacy layer ids are a chain hash; any unique hex will do for a reader.
    std::string id = Sha256Of(parent + Sha256Of(spec.layers[i]));
    parent = id;
    std::string path = id + "/layer.tar";
    layers.push_back(path);
    layout.files[id + "/VERSION"] = "1.0";
    layout.files[id + "/json"] = Json{{"id", id}}.dump();
    if (spec.missing_blob == i) continue;
    if (podman_links) {
      std::string target = Sha256Of(spec.layers[i]) + ".tar";
      layout.files[target] = spec.layers[i];
      layout.symlinks[path] = "../" + target;
    } else {
      layout.files[path] = spec.layers[i];
    }
  }
  Json save = Json::array({{{"Config", image.config_hex + ".json"},
                            {"RepoTags", {spec.ref_name}},
                            {"Layers", layers}}});
  layout.files["manifest.json"] = save.dump();
  layout.files["repositories"] = "{}";
  return image;
}

void WriteBytes(const std::string& path, const std::string& data) {
  auto slash = path.rfind('/');
  if (slash != std::string::npos) REQUIRE(MakeDirs(path.substr(0, slash)));
  REQUIRE(WriteFile(path, data));
}

std::string ReadBytes(const std::string& path) {
  auto content = ReadFile(path);
  REQUIRE(content);
  return *content;
}

void WriteLayoutDir(const Layout& layout, const std::string& dir) {
  for (const auto& [path, content] : layout.files) WriteBytes(dir + "/" + path, content);
  for (const auto& [path, target] : layout.symlinks) {
    auto full = dir + "/" + path;
    REQUIRE(MakeDirs(full.substr(0, full.rfind('/'))));
    REQUIRE(::symlink(target.c_str(), full.c_str()) == 0);
  }
}

void WriteLayoutTar(const Layout& layout, const std::string& path) {
  std::vector<TarEntry> entries;
  for (const auto& [name, content] : layout.files) entries.push_back(File(name, content));
  for (const auto& [name, target] : layout.symlinks) entries.push_back(Symlink(name, target));
  WriteBytes(path, MakeTar(entries));
}

}  // namespace sandbox::testing
