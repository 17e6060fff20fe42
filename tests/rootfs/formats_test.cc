// Every input format the store reads, checked file by file against the tree it must produce:
// images made by the tests (whiteouts, opaque directories, merged /usr, hardlinks), and real
// archives written by umoci and skopeo.
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "rootfs/store.h"
#include "tests/rootfs/archive_fixture.h"
#include "tests/rootfs/tree_snapshot.h"
#include "tests/support/test_support.h"

using namespace sandbox;
using namespace sandbox::testing;
using rootfs::ImageStore;

namespace {

constexpr int64_t kLayer2Time = 1'710'000'000;

TarEntry At(TarEntry entry, int64_t mtime) {
  entry.mtime = mtime;
  return entry;
}

// Two layers exercising the OCI layer semantics.
std::vector<std::string> LayeredImage() {
  std::string lower = MakeTar({
      Dir("./"),
      Dir("etc/"),
      File("etc/keep", "keep"),
      File("etc/gone", "gone"),
      File("etc/keep2", "becomes a directory"),
      Dir("usr/"),
      Dir("usr/bin/"),
      File("usr/bin/tool", "#!/bin/sh\necho payload\n", 0755),
      Hardlink("usr/bin/tool2", "usr/bin/tool"),
      Symlink("bin", "usr/bin"),  // merged /usr
      Dir("opq/"),
      File("opq/lower1", "hidden by the opaque marker"),
      Dir("opq/sub/"),
      File("opq/sub/lower2", "hidden too"),
      Dir("ws/"),
      File("ws/lower", "old"),
      Dir("ro/", 0555),
      File("ro/f", "in a read-only dir"),
      Dir("sticky/", 01777),
  });
  std::string upper = MakeTar({
      At(Dir("etc/"), kLayer2Time),
      File("etc/.wh.gone", ""),
      Dir("etc/keep2/"),
      File("etc/keep2/child", "child"),
      // Same-layer entries before the opaque marker survive it.
      At(Dir("opq/"), kLayer2Time),
      File("opq/new1", "new1"),
      File("opq/.wh..wh..opq", ""),
      File("opq/sub/new2", "new2"),
      // Through the merged-/usr symlink of the lower layer.
      File("bin/added", "added via bin/"),
      // A whiteout does not hide an entry of its own layer.
      File("ws/lower", "new"),
      File("ws/.wh.lower", ""),
      File("ro/g", "added to a 0555 dir"),
  });
  return {lower, upper};
}

Tree LayeredImageTree() {
  return {
      {"bin", L("usr/bin")},
      {"etc", D()},
      {"etc/keep", F("keep")},
      {"etc/keep2", D()},
      {"etc/keep2/child", F("child")},
      {"opq", D()},
      {"opq/new1", F("new1")},
      {"opq/sub", D()},
      {"opq/sub/new2", F("new2")},
      {"ro", D(0555)},
      {"ro/f", F("in a read-only dir")},
      {"ro/g", F("added to a 0555 dir")},
      {"sticky", D(01777)},
      {"usr", D()},
      {"usr/bin", D()},
      {"usr/bin/added", F("added via bin/")},
      {"usr/bin/tool", F("#!/bin/sh\necho payload\n", 0755)},
      {"usr/bin/tool2", F("#!/bin/sh\necho payload\n", 0755)},
      {"ws", D()},
      {"ws/lower", F("new")},
  };
}

// A flat export of the same tree, as `docker export` writes it (no whiteouts, no layers).
std::string FlatExport() {
  return MakeTar({
      Dir("./"),
      Symlink("bin", "usr/bin"),
      Dir("etc/"),
      File("etc/keep", "keep"),
      Dir("etc/keep2/"),
      File("etc/keep2/child", "child"),
      Dir("opq/"),
      File("opq/new1", "new1"),
      Dir("opq/sub/"),
      File("opq/sub/new2", "new2"),
      Dir("ro/", 0555),
      File("ro/f", "in a read-only dir"),
      File("ro/g", "added to a 0555 dir"),
      Dir("sticky/", 01777),
      Dir("usr/"),
      Dir("usr/bin/"),
      File("usr/bin/added", "added via bin/"),
      File("usr/bin/tool", "#!/bin/sh\necho payload\n", 0755),
      Hardlink("usr/bin/tool2", "usr/bin/tool"),
      Dir("ws/"),
      File("ws/lower", "new"),
      File(".dockerenv", ""),
  });
}

rootfs::StoredImage ImportInto(const std::string& state_dir, const std::string& path,
                               const std::string& name = "") {
  ImageStore store(state_dir);
  rootfs::ImportOptions options;
  options.name = name;
  auto image = store.Import(path, options);
  INFO("importing " << path);
  REQUIRE(image);
  return *image;
}

// The apparent size of the regular files, each inode once.
uint64_t FileBytes(const std::string& root) {
  uint64_t total = 0;
  std::set<ino_t> seen;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::end(it); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        seen.insert(st.st_ino).second) {
      total += static_cast<uint64_t>(st.st_size);
    }
  }
  return total;
}

void CheckTree(const rootfs::StoredImage& image, const Tree& expected) {
  Tree actual = Snapshot(image.rootfs, MountPointPaths());
  INFO(DiffTrees(expected, actual));
  CHECK(actual == expected);
  // The size the store reports is counted while unpacking, deletions and hardlinks included.
  CHECK(image.size_bytes == FileBytes(image.rootfs));
}

bool HaveTool(const char* tool) {
  return RunShell(std::string("command -v ") + tool + " >/dev/null 2>&1") == 0;
}

void Shell(const std::string& command) {
  std::string output;
  int status = RunShell(command + " 2>&1", &output);
  INFO(command << "\n" << output);
  REQUIRE(status == 0);
}

}  // namespace

TEST_CASE("a layered image imports to the same tree from every format and compression") {
  TempDir work;
  ImageSpec spec;
  spec.layers = LayeredImage();
  std::vector<std::pair<std::string, std::string>> inputs;  // label, path
  for (Codec codec : {Codec::kNone, Codec::kGzip, Codec::kZstd}) {
    spec.codec = codec;
    std::string dir = work.Join("oci-dir-" + std::to_string(static_cast<int>(codec)));
    WriteLayoutDir(OciLayout(spec).layout, dir);
    inputs.emplace_back("OCI layout directory, codec " + std::to_string(static_cast<int>(codec)),
                        dir);
  }
  spec.codec = Codec::kGzip;
  WriteLayoutTar(OciLayout(spec).layout, work.Join("oci.tar"));
  inputs.emplace_back("OCI archive", work.Join("oci.tar"));
  WriteLayoutTar(DockerSaveV25(spec).layout, work.Join("v25.tar"));
  inputs.emplace_back("docker save >= v25", work.Join("v25.tar"));
  spec.codec = Codec::kNone;
  WriteLayoutTar(DockerSaveLegacy(spec).layout, work.Join("legacy.tar"));
  inputs.emplace_back("docker save legacy", work.Join("legacy.tar"));
  WriteLayoutTar(DockerSaveLegacy(spec, /*podman_links=*/true).layout, work.Join("podman.tar"));
  inputs.emplace_back("podman docker-archive (symlinked layers)", work.Join("podman.tar"));
  WriteBytes(work.Join("legacy.tar.gz"),
             Compress(ReadBytes(work.Join("legacy.tar")), Codec::kGzip));
  inputs.emplace_back("docker save | gzip", work.Join("legacy.tar.gz"));
  WriteBytes(work.Join("v25.tar.zst"), Compress(ReadBytes(work.Join("v25.tar")), Codec::kZstd));
  inputs.emplace_back("docker save | zstd", work.Join("v25.tar.zst"));

  std::string config_digest;
  for (const auto& [label, path] : inputs) {
    CAPTURE(label);
    TempDir state;
    auto image = ImportInto(state.path(), path);
    CheckTree(image, LayeredImageTree());
    CHECK(image.names == std::vector<std::string>{"test:1"});
    // The same config whatever the packaging: one identity in the store.
    if (config_digest.empty()) config_digest = image.digest;
    CHECK(image.digest == config_digest);
    CHECK(image.config.working_dir == "/work");
    CHECK(image.config.user == "1000:1000");
    CHECK(image.config.env == std::vector<std::string>{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"});
    CHECK(image.created == "2024-01-02T03:04:05Z");
    // Hardlinks stay hardlinks.
    struct stat tool {
    }, tool2{};
    REQUIRE(::lstat((image.rootfs + "/usr/bin/tool").c_str(), &tool) == 0);
    REQUIRE(::lstat((image.rootfs + "/usr/bin/tool2").c_str(), &tool2) == 0);
    CHECK(tool.st_ino == tool2.st_ino);
    // Directory mtimes are applied last: etc/ got entries after its own entry.
    struct stat etc {};
    REQUIRE(::stat((image.rootfs + "/etc").c_str(), &etc) == 0);
    CHECK(etc.st_mtim.tv_sec == kLayer2Time);
  }
}

TEST_CASE("a docker export flat root filesystem imports with a synthesized config") {
  TempDir work;
  WriteBytes(work.Join("export.tar"), FlatExport());
  WriteBytes(work.Join("export.tar.gz"), Compress(FlatExport(), Codec::kGzip));
  TempDir state;
  auto image = ImportInto(state.path(), work.Join("export.tar"), "exported");
  Tree expected = LayeredImageTree();
  expected[".dockerenv"] = F("");
  CheckTree(image, expected);
  CHECK(image.names == std::vector<std::string>{"exported"});
  CHECK(image.config.working_dir == "/");
  CHECK(image.config.cmd == std::vector<std::string>{"/bin/sh"});
  REQUIRE_FALSE(image.config.env.empty());
  CHECK(image.config.env[0].rfind("PATH=", 0) == 0);
  // The same content compressed is the same image; different content is another.
  auto again = ImportInto(state.path(), work.Join("export.tar.gz"));
  CHECK(again.digest == image.digest);
  CHECK(again.reused);
  WriteBytes(work.Join("other.tar"), MakeTar({Dir("etc/"), File("etc/other", "x")}));
  CHECK(ImportInto(state.path(), work.Join("other.tar")).digest != image.digest);
}

TEST_CASE("a multi-platform index resolves to the host platform, other blobs may be missing") {
  TempDir work;
  ImageSpec spec;
  spec.layers = LayeredImage();
  spec.codec = Codec::kGzip;
  spec.multi_platform = true;
  WriteLayoutTar(DockerSaveV25(spec).layout, work.Join("multi.tar"));
  WriteLayoutDir(OciLayout(spec).layout, work.Join("multi"));
  for (const char* input : {"multi.tar", "multi"}) {
    CAPTURE(input);
    TempDir state;
    auto image = ImportInto(state.path(), work.Join(input));
    CheckTree(image, LayeredImageTree());
    CHECK(image.config.architecture == "amd64");
  }
}

TEST_CASE("an image for another platform, or an index listing none, is refused clearly") {
  TempDir work;
  ImageSpec spec;
  spec.layers = LayeredImage();
  spec.architecture = "arm64";
  WriteLayoutDir(OciLayout(spec).layout, work.Join("arm"));
  TempDir state;
  ImageStore store(state.path());
  auto arm = store.Import(work.Join("arm"));
  REQUIRE_FALSE(arm);
  CHECK_THAT(arm.error().message, Catch::Contains("arm64"));

  // docker save of an image pulled by digest: "manifests": null (moby#47210). With
  // manifest.json present it is used; without it the error says the index is empty.
  spec.architecture = "amd64";
  BuiltImage v25 = DockerSaveV25(spec);
  v25.layout.files["index.json"] = R"({"schemaVersion":2,"manifests":null})";
  WriteLayoutTar(v25.layout, work.Join("null-index.tar"));
  auto image = store.Import(work.Join("null-index.tar"));
  REQUIRE(image);
  CHECK(image->digest == "sha256:" + v25.config_hex);
  v25.layout.files.erase("manifest.json");
  WriteLayoutTar(v25.layout, work.Join("empty.tar"));
  auto empty = store.Import(work.Join("empty.tar"));
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::Contains("lists no image"));

  WriteBytes(work.Join("junk.tar"), MakeTar({File("README", "not an image")}));
  auto junk = store.Import(work.Join("junk.tar"));
  REQUIRE_FALSE(junk);
  CHECK_THAT(junk.error().message, Catch::Contains("not an image"));
  auto missing = store.Import(work.Join("does-not-exist.tar"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
}

TEST_CASE("real archives written by umoci and skopeo import file by file", "[tools]") {
  if (!HaveTool("umoci") || !HaveTool("skopeo")) SkipTest("umoci and skopeo are not installed");
  TempDir work;
  const std::string oci = work.Join("oci");
  const std::string b1 = work.Join("bundle1");
  const std::string b2 = work.Join("bundle2");
  Shell("umoci init --layout " + oci + " && umoci new --image " + oci + ":img");
  Shell("umoci unpack --rootless --image " + oci + ":img " + b1);
  // Layer 1: a small system with merged /usr, modes, a hardlink, nested directories.
  Shell("cd " + b1 +
        "/rootfs && mkdir -p usr/bin usr/lib/pkg/sub etc/conf.d var/cache/app home/u"
        " && ln -s usr/bin bin && ln -s usr/lib lib"
        " && printf '#!/bin/sh\\necho hi\\n' > usr/bin/hello && chmod 755 usr/bin/hello"
        " && ln usr/bin/hello usr/bin/hello-again"
        " && echo conf > etc/conf.d/a.conf && echo b > etc/conf.d/b.conf"
        " && echo secret > etc/shadow && chmod 640 etc/shadow"
        " && echo lib > usr/lib/pkg/mod.py && echo deep > usr/lib/pkg/sub/deep.py"
        " && echo c1 > var/cache/app/c1 && echo c2 > var/cache/app/c2"
        " && chmod 700 home/u && echo note > home/u/note && ln -s ../../etc/conf.d/a.conf "
        "home/u/link");
  Shell("umoci repack --image " + oci + ":img " + b1);
  Shell("umoci unpack --rootless --image " + oci + ":img " + b2);
  // Layer 2: deletions (whiteouts), a directory replaced, files changed and added.
  Shell("cd " + b2 +
        "/rootfs && rm etc/conf.d/b.conf && rm -rf var/cache/app usr/lib/pkg/sub"
        " && mkdir -p var/cache/app && echo fresh > var/cache/app/fresh"
        " && echo changed > etc/conf.d/a.conf && echo added > bin/added && chmod 755 bin/added"
        " && rm home/u/note");
  Shell("umoci repack --image " + oci + ":img " + b2);
  const Tree expected = Snapshot(b2 + "/rootfs");
  REQUIRE(expected.count("usr/bin/added") == 1);
  REQUIRE(expected.count("etc/conf.d/b.conf") == 0);

  Shell("skopeo copy oci:" + oci + ":img oci-archive:" + work.Join("oci-archive.tar") + ":img");
  Shell("skopeo copy oci:" + oci + ":img docker-archive:" + work.Join("docker-archive.tar") +
        ":example/img:1");

  // >= v25 docker save, and the same image with zstd and with uncompressed layers, made from
  // umoci's blobs: same diff_ids, so the same config and the same image.
  auto index = nlohmann::json::parse(ReadBytes(oci + "/index.json"));
  std::string manifest_hex = index["manifests"][0]["digest"].get<std::string>().substr(7);
  auto manifest = nlohmann::json::parse(ReadBytes(oci + "/blobs/sha256/" + manifest_hex));
  std::string config_hex = manifest["config"]["digest"].get<std::string>().substr(7);
  Layout v25;
  v25.files["oci-layout"] = ReadBytes(oci + "/oci-layout");
  v25.files["index.json"] = ReadBytes(oci + "/index.json");
  v25.files["blobs/sha256/" + manifest_hex] = ReadBytes(oci + "/blobs/sha256/" + manifest_hex);
  v25.files["blobs/sha256/" + config_hex] = ReadBytes(oci + "/blobs/sha256/" + config_hex);
  nlohmann::json save_layers = nlohmann::json::array();
  std::map<Codec, Layout> recompressed;
  for (Codec codec : {Codec::kZstd, Codec::kNone}) {
    recompressed[codec].files["oci-layout"] = v25.files["oci-layout"];
  }
  std::map<Codec, nlohmann::json> recompressed_manifest = {{Codec::kZstd, manifest},
                                                           {Codec::kNone, manifest}};
  for (size_t i = 0; i < manifest["layers"].size(); ++i) {
    std::string hex = manifest["layers"][i]["digest"].get<std::string>().substr(7);
    std::string blob = ReadBytes(oci + "/blobs/sha256/" + hex);
    v25.files["blobs/sha256/" + hex] = blob;
    save_layers.push_back("blobs/sha256/" + hex);
    for (Codec codec : {Codec::kZstd, Codec::kNone}) {
      std::string other = Compress(Decompress(blob), codec);
      std::string other_hex = Sha256Of(other);
      recompressed[codec].files["blobs/sha256/" + other_hex] = other;
      auto& layer = recompressed_manifest[codec]["layers"][i];
      layer["digest"] = "sha256:" + other_hex;
      layer["size"] = other.size();
      layer["mediaType"] = codec == Codec::kZstd ? "application/vnd.oci.image.layer.v1.tar+zstd"
                                                 : "application/vnd.oci.image.layer.v1.tar";
    }
  }
  v25.files["manifest.json"] = nlohmann::json::array({{{"Config", "blobs/sha256/" + config_hex},
                                                       {"RepoTags", {"example/img:v25"}},
                                                       {"Layers", save_layers}}})
                                   .dump();
  WriteLayoutTar(v25, work.Join("v25.tar"));
  for (Codec codec : {Codec::kZstd, Codec::kNone}) {
    Layout& layout = recompressed[codec];
    std::string text = recompressed_manifest[codec].dump();
    std::string hex = Sha256Of(text);
    layout.files["blobs/sha256/" + hex] = text;
    layout.files["blobs/sha256/" + config_hex] = v25.files["blobs/sha256/" + config_hex];
    nlohmann::json new_index = index;
    new_index["manifests"][0]["digest"] = "sha256:" + hex;
    new_index["manifests"][0]["size"] = text.size();
    layout.files["index.json"] = new_index.dump();
    WriteLayoutDir(layout, work.Join(codec == Codec::kZstd ? "oci-zstd" : "oci-plain"));
  }
  // And what `docker export` of a container of it would give.
  Shell("tar -C " + b2 + "/rootfs -cf " + work.Join("export.tar") + " .");

  struct Input {
    const char* label;
    std::string path;
    std::vector<std::string> names;
  };
  std::vector<Input> inputs = {
      {"umoci OCI layout (gzip layers)", oci, {"img"}},
      {"skopeo oci-archive", work.Join("oci-archive.tar"), {"img"}},
      {"skopeo docker-archive (legacy docker save, symlinked layers)",
       work.Join("docker-archive.tar"),
       {"docker.io/example/img:1"}},
      {"docker save >= v25 layout", work.Join("v25.tar"), {"example/img:v25"}},
      {"zstd layers", work.Join("oci-zstd"), {"img"}},
      {"uncompressed layers", work.Join("oci-plain"), {"img"}},
      {"flat export", work.Join("export.tar"), {}},
  };
  for (const auto& input : inputs) {
    CAPTURE(input.label);
    TempDir state;
    auto image = ImportInto(state.path(), input.path);
    CheckTree(image, expected);
    CHECK(image.names == input.names);
    if (std::string(input.label) != "flat export") CHECK(image.digest == "sha256:" + config_hex);
    struct stat a {
    }, b{};
    REQUIRE(::lstat((image.rootfs + "/usr/bin/hello").c_str(), &a) == 0);
    REQUIRE(::lstat((image.rootfs + "/usr/bin/hello-again").c_str(), &b) == 0);
    CHECK(a.st_ino == b.st_ino);
  }
}
