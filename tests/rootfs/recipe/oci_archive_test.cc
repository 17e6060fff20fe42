// The OCI documents the recipe writes, the layer rewrite of mmdebstrap's tarball, and the
// outer archive, checked with the store's own parsers, libarchive and skopeo.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "rootfs/digest.h"
#include "rootfs/oci_json.h"
#include "rootfs/recipe/oci_archive_writer.h"
#include "rootfs/recipe/oci_documents.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "tests/rootfs/archive_fixture.h"
#include "tests/rootfs/recipe/tar_fixture.h"
#include "tests/support/test_support.h"

namespace sandbox::rootfs::oci_archive_test {
namespace {

using nlohmann::json;
using testing::AsMap;
using testing::Dir;
using testing::File;
using testing::Hardlink;
using testing::ReadTar;
using testing::Special;
using testing::Symlink;
using testing::TarEntry;
using testing::TempDir;
using testing::WriteTar;

// As mmdebstrap's tarball has them: a user name and an atime on every entry, which the layer
// rewrite must drop.
std::vector<TarEntry> AsBuilt(std::vector<TarEntry> entries) {
  for (auto& e : entries) {
    e.uname = "builder";
    e.atime = 1'700'000'001;
  }
  return entries;
}

Recipe SmallRecipe() { return MakeRecipe(ImageVariant::kSmall, "trixie").value(); }

TEST_CASE("image config: user, env, working dir, labels and the diff_id", "[unit]") {
  Recipe recipe = SmallRecipe();
  ConfigInputs inputs;
  inputs.recipe = &recipe;
  inputs.architecture = "amd64";
  inputs.created = "2025-01-02T03:04:05Z";
  inputs.diff_id_hex = std::string(64, 'a');
  inputs.labels = {{"io.mcp-sandbox.recipe", "abc"}};
  std::string text = ImageConfigJson(inputs);

  json doc = json::parse(text);
  CHECK(doc["architecture"] == "amd64");
  CHECK(doc["os"] == "linux");
  CHECK(doc["created"] == "2025-01-02T03:04:05Z");
  CHECK(doc["config"]["User"] == "1000:1000");
  CHECK(doc["config"]["WorkingDir"] == "/mnt/data");
  CHECK(doc["config"]["Labels"]["io.mcp-sandbox.recipe"] == "abc");
  CHECK(doc["rootfs"]["type"] == "layers");
  CHECK(doc["rootfs"]["diff_ids"] == json::array({"sha256:" + std::string(64, 'a')}));
  CHECK(doc["history"].size() == 1);

  // The store's importer reads it back the same.
  auto parsed = ParseImageConfig(text);
  REQUIRE(parsed);
  CHECK(parsed->config.user == "1000:1000");
  CHECK(parsed->config.working_dir == "/mnt/data");
  CHECK(parsed->config.env == recipe.env);
  CHECK(parsed->config.cmd == std::vector<std::string>{"python3"});
  CHECK(parsed->diff_id_hexes == std::vector<std::string>{std::string(64, 'a')});
}

TEST_CASE("manifest, index.json and manifest.json point at the right blobs", "[unit]") {
  Blob config{std::string(64, 'c'), 1234};
  Blob layer{std::string(64, 'd'), 567890};
  std::string manifest_text = ImageManifestJson(config, layer);
  auto manifest = ParseImageManifest(manifest_text);
  REQUIRE(manifest);
  CHECK(manifest->config.digest_hex == config.hex);
  CHECK(manifest->config.size == 1234);
  CHECK(manifest->config.media_type == kOciConfigMediaType);
  REQUIRE(manifest->layers.size() == 1);
  CHECK(manifest->layers[0].digest_hex == layer.hex);
  CHECK(manifest->layers[0].size == 567890);
  CHECK(manifest->layers[0].media_type == kOciLayerMediaType);
  CHECK(json::parse(manifest_text)["schemaVersion"] == 2);

  Blob manifest_blob{Sha256Hex(manifest_text), manifest_text.size()};
  std::string reference = DockerReference("python");
  CHECK(reference == "mcp-sandbox/python:latest");
  auto index = ParseImageIndex(ImageIndexJson(manifest_blob, reference));
  REQUIRE(index);
  REQUIRE(index->manifests.size() == 1);
  const Descriptor& entry = index->manifests[0];
  CHECK(entry.digest_hex == manifest_blob.hex);
  CHECK(entry.media_type == kOciManifestMediaType);
  CHECK(entry.annotations.at("org.opencontainers.image.ref.name") == "latest");
  CHECK(entry.annotations.at("io.containerd.image.name") == "docker.io/mcp-sandbox/python:latest");

  auto save = ParseDockerSaveManifest(DockerSaveManifestJson(config, layer, reference));
  REQUIRE(save);
  REQUIRE(save->size() == 1);
  CHECK((*save)[0].config == "blobs/sha256/" + config.hex);
  CHECK((*save)[0].repo_tags == std::vector<std::string>{"mcp-sandbox/python:latest"});
  CHECK((*save)[0].layers == std::vector<std::string>{"blobs/sha256/" + layer.hex});
}

TEST_CASE("the layer rewrite drops devices, privileges and host details, and keeps content",
          "[unit]") {
  TempDir dir;
  std::string input = dir.Join("rootfs.tar");
  TarEntry python = File("./usr/bin/python3.13", "python", 0755);
  python.xattrs = {{"user.test", "v"}, {"security.capability", "\x01\x02"}};
  WriteTar(input, AsBuilt({
                      Dir("./"),
                      Dir("./dev/"),
                      Special("./dev/null", TarEntry::Kind::kCharDevice),
                      Symlink("./dev/fd", "/proc/self/fd"),
                      Special("./run/fifo", TarEntry::Kind::kFifo),
                      Dir("./tmp/", 01777),
                      File("./usr/bin/su", "su-binary", 04755),
                      File("./usr/bin/wall", "wall-binary", 02755),
                      python,
                      Hardlink("./usr/bin/python3", "./usr/bin/python3.13"),
                      Hardlink("./run/fifo2", "./run/fifo"),
                      Dir("./var/mail/", 02775),
                      Dir("./mnt/data/", 0755, 1000),
                  }));
  std::string layer_path = dir.Join("layer.tar");
  Fd fd(::open(input.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  auto layer = WriteLayerFromRootfsTar(fd.get(), layer_path);
  REQUIRE(layer);

  auto bytes = ReadFile(layer_path);
  REQUIRE(bytes);
  CHECK(layer->size == bytes->size());
  CHECK(layer->hex == Sha256Hex(*bytes));

  auto entries = ReadTar(layer_path);
  std::vector<std::string> names;
  for (const auto& [name, e] : entries) names.push_back(name);
  CHECK(names == std::vector<std::string>{"dev/", "dev/fd", "tmp/", "usr/bin/su", "usr/bin/wall",
                                          "usr/bin/python3.13", "usr/bin/python3", "var/mail/",
                                          "mnt/data/"});
  auto by_name = AsMap(entries);
  CHECK(by_name["usr/bin/su"].perm == 0755);
  CHECK(by_name["usr/bin/wall"].perm == 0755);
  CHECK(by_name["usr/bin/su"].data == "su-binary");
  CHECK(by_name["tmp/"].perm == 01777);
  CHECK(by_name["var/mail/"].perm == 02775);  // setgid on a directory only means inheritance
  CHECK(by_name["dev/fd"].symlink == "/proc/self/fd");
  CHECK(by_name["usr/bin/python3"].hardlink == "usr/bin/python3.13");
  CHECK(by_name["usr/bin/python3.13"].data == "python");
  CHECK(by_name["usr/bin/python3.13"].xattrs == 0);
  CHECK(by_name["mnt/data/"].uid == 1000);
  for (const auto& [name, e] : entries) {
    INFO(name);
    CHECK(e.uname.empty());
    CHECK_FALSE(e.atime_set);
    CHECK(e.mtime == 1700000000);
  }
}

TEST_CASE("a truncated rootfs tarball fails the layer rewrite", "[unit]") {
  TempDir dir;
  std::string input = dir.Join("rootfs.tar");
  WriteTar(input, AsBuilt({Dir("./usr/"), File("./usr/big", std::string(100000, 'x'))}));
  REQUIRE(::truncate(input.c_str(), 20000) == 0);
  Fd fd(::open(input.c_str(), O_RDONLY | O_CLOEXEC));
  auto layer = WriteLayerFromRootfsTar(fd.get(), dir.Join("layer.tar"));
  CHECK_FALSE(layer);
}

// A complete one-layer archive made from a tiny rootfs, the way BuildImage assembles it.
std::string WriteTestArchive(const TempDir& dir, const std::string& name,
                             const std::string& image_name = "python-small") {
  std::string input = dir.Join("rootfs.tar");
  WriteTar(input, AsBuilt({Dir("./etc/"),
                           File("./etc/passwd", "sandbox:x:1000:1000::/home/sandbox:/bin/sh\n"),
                           Dir("./mnt/data/", 0755, 1000)}));
  Fd fd(::open(input.c_str(), O_RDONLY | O_CLOEXEC));
  std::string layer_path = dir.Join("layer.tar");
  Blob layer = WriteLayerFromRootfsTar(fd.get(), layer_path).value();

  Recipe recipe = SmallRecipe();
  ConfigInputs inputs;
  inputs.recipe = &recipe;
  inputs.architecture = HostArchitecture();
  inputs.created = "2025-01-02T03:04:05Z";
  inputs.diff_id_hex = layer.hex;
  OciArchiveParts parts;
  parts.config_json = ImageConfigJson(inputs);
  Blob config{Sha256Hex(parts.config_json), parts.config_json.size()};
  parts.manifest_json = ImageManifestJson(config, layer);
  Blob manifest{Sha256Hex(parts.manifest_json), parts.manifest_json.size()};
  parts.index_json = ImageIndexJson(manifest, DockerReference(image_name));
  parts.docker_manifest_json = DockerSaveManifestJson(config, layer, DockerReference(image_name));
  parts.layer_path = layer_path;
  parts.layer = layer;
  std::string path = dir.Join(name);
  REQUIRE(WriteOciArchive(parts, path));
  return path;
}

TEST_CASE("the outer archive: documents first, layer last, fixed owners and times", "[unit]") {
  TempDir dir;
  std::string path = WriteTestArchive(dir, "image.tar");
  auto entries = ReadTar(path);
  REQUIRE(entries.size() == 8);
  CHECK(entries[0].first == "oci-layout");
  CHECK(json::parse(entries[0].second.data)["imageLayoutVersion"] == "1.0.0");
  CHECK(entries[1].first == "index.json");
  CHECK(entries[2].first == "manifest.json");
  CHECK(entries[3].first == "blobs/");
  CHECK(entries[4].first == "blobs/sha256/");
  for (size_t i = 5; i < entries.size(); ++i) {
    const std::string& name = entries[i].first;
    REQUIRE(name.rfind("blobs/sha256/", 0) == 0);
    // Every blob hashes to its name.
    CHECK(Sha256Hex(entries[i].second.data) == name.substr(13));
  }
  auto save = ParseDockerSaveManifest(entries[2].second.data).value();
  CHECK("blobs/sha256/" + save[0].layers[0].substr(13) == entries.back().first);
  for (const auto& [name, e] : entries) {
    CHECK(e.mtime == 0);
    CHECK(e.uid == 0);
  }

  // Same inputs, same bytes.
  TempDir again;
  CHECK(ReadFile(WriteTestArchive(again, "image.tar")).value() == ReadFile(path).value());
}

TEST_CASE("skopeo reads the archive both as oci-archive and as docker-archive", "[archive]") {
  if (testing::RunShell("command -v skopeo >/dev/null") != 0) {
    testing::SkipTest("skopeo is not installed (apt-get install skopeo)");
  }
  TempDir dir;
  std::string path = WriteTestArchive(dir, "image.tar");
  for (const std::string transport : {"oci-archive:", "docker-archive:"}) {
    INFO(transport);
    std::string output;
    int rc = testing::RunShell("skopeo inspect --config " + transport + path + " 2>&1", &output);
    INFO(output);
    REQUIRE(rc == 0);
    json config = json::parse(output);
    CHECK(config["config"]["User"] == "1000:1000");
    CHECK(config["architecture"] == HostArchitecture());
  }
  // docker load tags the image from manifest.json's RepoTags.
  std::string output;
  REQUIRE(testing::RunShell("skopeo list-tags docker-archive:" + path + " 2>&1", &output) == 0);
  CHECK(output.find("mcp-sandbox/python-small:latest") != std::string::npos);
}

TEST_CASE("docker load accepts the archive and tags the image", "[docker]") {
  if (testing::RunShell("docker info >/dev/null 2>&1") != 0) {
    testing::SkipTest("no Docker daemon answers (tools/lib/dockerd.sh start)");
  }
  TempDir dir;
  std::string image_name = "recipe-test-" + std::to_string(::getpid());
  std::string reference = DockerReference(image_name);
  std::string path = WriteTestArchive(dir, "image.tar", image_name);
  std::string output;
  int rc = testing::RunShell("docker load -i " + path + " 2>&1", &output);
  INFO(output);
  CHECK(rc == 0);
  CHECK(output.find(reference) != std::string::npos);
  output.clear();
  rc =
      testing::RunShell("docker image inspect --format '{{.Config.User}} {{.Config.WorkingDir}}' " +
                            reference + " 2>&1",
                        &output);
  CHECK(testing::RunShell("docker rmi " + reference + " >/dev/null 2>&1") == 0);
  CHECK(rc == 0);
  CHECK(output == "1000:1000 /mnt/data\n");
}

}  // namespace
}  // namespace sandbox::rootfs::oci_archive_test
