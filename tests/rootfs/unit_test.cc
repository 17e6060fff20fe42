// Pure logic of rootfs/: entry names, whiteout names, digests, OCI documents, platform choice.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "rootfs/archive_reader.h"
#include "rootfs/digest.h"
#include "rootfs/entry_path.h"
#include "rootfs/image_source.h"
#include "rootfs/oci_json.h"
#include "rootfs/whiteout.h"

using namespace sandbox;
using namespace sandbox::rootfs;

namespace {
std::string Joined(std::string_view raw) {
  auto path = NormalizeEntryPath(raw, 4096);
  REQUIRE(path);
  return path->Joined();
}
}  // namespace

TEST_CASE("entry names are normalized, leading slashes are stripped", "[unit]") {
  CHECK(Joined("a/b/c") == "a/b/c");
  CHECK(Joined("./a//b/./c/") == "a/b/c");
  CHECK(Joined("/etc/passwd") == "etc/passwd");
  CHECK(Joined("///etc") == "etc");
  CHECK(Joined("./") == "");
  CHECK(Joined(".") == "");
  CHECK(NormalizeEntryPath("./", 4096)->IsRoot());
  auto path = NormalizeEntryPath("usr/bin/env", 4096);
  REQUIRE(path);
  CHECK(path->Base() == "env");
  CHECK(path->ParentJoined() == "usr/bin");
}

TEST_CASE("entry names with .., NUL or beyond the caps are refused", "[unit]") {
  for (std::string_view bad : {"../x", "a/../../x", "a/..", "..", "/../etc/x"}) {
    CAPTURE(bad);
    auto path = NormalizeEntryPath(bad, 4096);
    REQUIRE_FALSE(path);
    CHECK(path.error().code == ErrorCode::kInvalidPath);
  }
  CHECK_FALSE(NormalizeEntryPath(std::string_view("a\0b", 3), 4096));
  CHECK_FALSE(NormalizeEntryPath(std::string(101, 'a'), 100));
  CHECK(NormalizeEntryPath(std::string(100, 'a'), 100));
  CHECK_FALSE(NormalizeEntryPath(std::string(256, 'a'), 4096));  // NAME_MAX
  // A file named "..." or "..x" is an ordinary name.
  CHECK(Joined("a/.../..x") == "a/.../..x");
}

TEST_CASE("whiteout names follow the OCI layer spec", "[unit]") {
  auto classify = [](std::string_view raw) {
    auto path = NormalizeEntryPath(raw, 4096);
    REQUIRE(path);
    return ClassifyWhiteout(*path);
  };
  CHECK(classify("etc/passwd")->kind == WhiteoutKind::kNone);
  auto remove = classify("etc/.wh.passwd");
  REQUIRE(remove);
  CHECK(remove->kind == WhiteoutKind::kRemove);
  CHECK(remove->target == "passwd");
  CHECK(classify("etc/.wh..wh..opq")->kind == WhiteoutKind::kOpaque);
  CHECK(classify(".wh..wh..opq")->kind == WhiteoutKind::kOpaque);
  CHECK(classify(".wh..wh.plnk/123.456")->kind == WhiteoutKind::kAufsMeta);
  CHECK(classify("x/.wh..wh.aufs")->kind == WhiteoutKind::kAufsMeta);
  CHECK(classify(".wh..hidden")->target == ".hidden");  // whiteout of a dotfile
  for (std::string_view bad : {".wh.", "a/.wh.", "a/.wh..", "a/.wh...", ".wh../x", "a/.wh.b/c"}) {
    CAPTURE(bad);
    auto classified = classify(bad);
    REQUIRE_FALSE(classified);
    CHECK(classified.error().code == ErrorCode::kInvalidPath);
  }
}

TEST_CASE("sha256 digests: streaming, parsing, validation", "[unit]") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 hash;
  hash.Update("ab");
  hash.Update("c");
  CHECK(hash.FinishHex() == Sha256Hex("abc"));
  std::string hex(64, 'a');
  CHECK(ParseSha256Digest("sha256:" + hex).value() == hex);
  CHECK_FALSE(ParseSha256Digest("sha512:" + hex));
  CHECK_FALSE(ParseSha256Digest("sha256:" + std::string(64, 'A')));
  CHECK_FALSE(ParseSha256Digest("sha256:../../etc/passwd"));
  CHECK_FALSE(ParseSha256Digest("sha256:" + hex + "0"));
  CHECK_FALSE(IsSha256Hex(std::string(63, 'a')));
}

TEST_CASE("compression is sniffed from magic bytes", "[unit]") {
  CHECK(SniffCompression(std::string_view("\x1f\x8b\x08\x00", 4)) == Compression::kGzip);
  CHECK(SniffCompression(std::string_view("\x28\xb5\x2f\xfd", 4)) == Compression::kZstd);
  CHECK(SniffCompression(std::string_view("usr/", 4)) == Compression::kNone);
  CHECK(SniffCompression(std::string_view("\x1f", 1)) == Compression::kNone);
}

TEST_CASE("outer-archive member names resolve lexically and never climb out", "[unit]") {
  CHECK(NormalizeMemberName("./blobs//sha256/x") == "blobs/sha256/x");
  CHECK(NormalizeMemberName("abc/../def.tar") == "def.tar");
  CHECK(NormalizeMemberName("../../etc/passwd") == "etc/passwd");
  CHECK(NormalizeMemberName("/manifest.json") == "manifest.json");
}

TEST_CASE("image index, manifest and config parse, null manifests is empty", "[unit]") {
  std::string hex(64, 'b');
  auto index = ParseImageIndex(R"({"schemaVersion":2,"manifests":[{"mediaType":
      "application/vnd.oci.image.manifest.v1+json","digest":"sha256:)" +
                               hex +
                               R"(","size":12,"platform":{"os":"linux","architecture":"arm64",
      "variant":"v8"},"annotations":{"org.opencontainers.image.ref.name":"3.12"}}]})");
  REQUIRE(index);
  REQUIRE(index->manifests.size() == 1);
  const Descriptor& d = index->manifests[0];
  CHECK(d.digest_hex == hex);
  CHECK(d.size == 12);
  CHECK(PlatformName(d.platform) == "linux/arm64/v8");
  CHECK(DescriptorNames(d) == std::vector<std::string>{"3.12"});
  CHECK(ParseImageIndex(R"({"schemaVersion":2,"manifests":null})")->manifests.empty());
  CHECK_FALSE(ParseImageIndex(R"({"manifests":[{"digest":"sha256:nothex"}]})"));
  CHECK_FALSE(ParseImageIndex("[1,2]"));
  CHECK_FALSE(ParseImageIndex("{not json"));

  auto manifest = ParseImageManifest(R"({"config":{"digest":"sha256:)" + hex +
                                     R"("},"layers":[{"digest":"sha256:)" + hex + R"("}]})");
  REQUIRE(manifest);
  CHECK(manifest->layers.size() == 1);
  CHECK_FALSE(ParseImageManifest(R"({"layers":[]})"));

  auto config =
      ParseImageConfig(R"({"architecture":"amd64","os":"linux","created":"2024-01-01T00:00:00Z",
      "config":{"Env":["A=1"],"Cmd":["sh"],"WorkingDir":"/w","User":"1000","Entrypoint":null},
      "rootfs":{"type":"layers","diff_ids":["sha256:)" +
                       hex + R"("]}})");
  REQUIRE(config);
  CHECK(config->config.env == std::vector<std::string>{"A=1"});
  CHECK(config->config.cmd == std::vector<std::string>{"sh"});
  CHECK(config->config.entrypoint.empty());
  CHECK(config->config.working_dir == "/w");
  CHECK(config->config.user == "1000");
  CHECK(config->created == "2024-01-01T00:00:00Z");
  CHECK(config->diff_id_hexes == std::vector<std::string>{hex});
  CHECK_FALSE(ParseImageConfig(R"({"config":{"Env":"A=1"},"rootfs":{"diff_ids":[]}})"));
  CHECK_FALSE(ParseImageConfig(R"({"config":{}})"));  // no rootfs
}

TEST_CASE("docker save manifest.json parses", "[unit]") {
  auto entries = ParseDockerSaveManifest(
      R"([{"Config":"abc.json","RepoTags":["python:3.12"],"Layers":["a/layer.tar","b/layer.tar"]},
          {"Config":"def.json","RepoTags":null,"Layers":[]}])");
  REQUIRE(entries);
  REQUIRE(entries->size() == 2);
  CHECK((*entries)[0].repo_tags == std::vector<std::string>{"python:3.12"});
  CHECK((*entries)[0].layers.size() == 2);
  CHECK((*entries)[1].repo_tags.empty());
  CHECK_FALSE(ParseDockerSaveManifest(R"({"Config":"x"})"));
  CHECK_FALSE(ParseDockerSaveManifest(R"([{"Layers":[]}])"));
}

TEST_CASE("image documents nested 100 000 deep are refused before parsing", "[unit]") {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string object = R"({"schemaVersion":2,"manifests":[],"layers":[],"x":)" + deep + "}";
  auto refused = [](const auto& parsed) {
    REQUIRE_FALSE(parsed);
    INFO(parsed.error().message);
    CHECK(parsed.error().code == sandbox::ErrorCode::kInvalidArgument);
    CHECK(parsed.error().message.find("nested deeper") != std::string::npos);
  };
  refused(ParseImageIndex(object));
  refused(ParseImageManifest(object));
  refused(ParseImageConfig(object));
  refused(ParseDockerSaveManifest("[" + deep + "]"));
  CHECK(SniffDocumentKind(object) == DocumentKind::kUnknown);
}

TEST_CASE("platform choice: the host's linux platform, attestations skipped", "[unit]") {
  CHECK(PlatformScore(Platform{"linux", HostArchitecture(), ""}) == 2);
  CHECK(PlatformScore(std::nullopt) == 1);
  CHECK(PlatformScore(Platform{"linux", HostArchitecture() == "arm64" ? "amd64" : "arm64", ""}) ==
        0);
  CHECK(PlatformScore(Platform{"windows", HostArchitecture(), ""}) == 0);
  Descriptor attestation;
  attestation.annotations["vnd.docker.reference.type"] = "attestation-manifest";
  CHECK(IsAttestation(attestation));
  Descriptor unknown;
  unknown.platform = Platform{"unknown", "unknown", ""};
  CHECK(IsAttestation(unknown));
  CHECK_FALSE(IsAttestation(Descriptor{}));
  CHECK(IsIndexMediaType("application/vnd.docker.distribution.manifest.list.v2+json"));
  CHECK(IsManifestMediaType("application/vnd.docker.distribution.manifest.v2+json"));
  CHECK(SniffDocumentKind(R"({"manifests":[]})") == DocumentKind::kIndex);
  CHECK(SniffDocumentKind(R"({"layers":[]})") == DocumentKind::kManifest);
  CHECK(SniffDocumentKind("garbage") == DocumentKind::kUnknown);
}

TEST_CASE("the config synthesized for a flat rootfs is deterministic and complete", "[unit]") {
  std::string hex(64, 'c');
  std::string config = SynthesizeFlatConfig(hex);
  CHECK(config == SynthesizeFlatConfig(hex));
  CHECK(config != SynthesizeFlatConfig(std::string(64, 'd')));
  auto parsed = ParseImageConfig(config);
  REQUIRE(parsed);
  CHECK(parsed->diff_id_hexes == std::vector<std::string>{hex});
  CHECK(parsed->config.working_dir == "/");
  CHECK(parsed->config.cmd == std::vector<std::string>{"/bin/sh"});
  REQUIRE(parsed->config.env.size() == 1);
  CHECK(parsed->config.env[0].rfind("PATH=/usr/local/sbin:", 0) == 0);
  CHECK(parsed->config.os == "linux");
  auto json = nlohmann::json::parse(config);
  CHECK(json["history"].is_array());
  CHECK(json["history"][0]["created_by"].is_string());
}
