// `image build`: the command line, the archive cache, and one real build of the small variant
// with mmdebstrap, checked with skopeo, by reading the layer, and by importing it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "rootfs/recipe/image_builder.h"
#include "runtime/base/files.h"
#include "tests/rootfs/recipe/tar_fixture.h"
#include "tests/support/test_support.h"
#include "tools/cli/commands.h"

namespace sandbox::rootfs::image_build_test {
namespace {

using nlohmann::json;
using testing::TempDir;

// Runs the command with std::cout captured.
int RunBuild(const std::vector<std::string>& args, ImageStore& store, std::string* out) {
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  int rc = cli::ImageBuildCommand(args, store);
  std::cout.rdbuf(old);
  *out = captured.str();
  std::cerr << captured.str();
  return rc;
}

TEST_CASE("image build: --help, and usage errors exit 2", "[unit]") {
  TempDir state;
  ImageStore store(state.path());
  std::string out;
  CHECK(RunBuild({"--help"}, store, &out) == 0);
  CHECK(out.find("example:") != std::string::npos);
  CHECK(out.find("--variant") != std::string::npos);
  CHECK(RunBuild({"--variant", "huge"}, store, &out) == 2);
  CHECK(RunBuild({"--variant"}, store, &out) == 2);
  CHECK(RunBuild({"--bogus"}, store, &out) == 2);
  CHECK(RunBuild({"--suite", "Trixie Main"}, store, &out) == 2);
  CHECK(RunBuild({"--name", "../etc"}, store, &out) == 2);
  CHECK(RunBuild({"--rebuild=yes"}, store, &out) == 2);
  CHECK(RunBuild({"stray"}, store, &out) == 2);
  // Nothing was built or written for any of these.
  struct stat st {};
  CHECK(::stat((state.path() + "/archives").c_str(), &st) != 0);
}

TEST_CASE("the archive cache is used only for the current recipe and an intact archive", "[unit]") {
  TempDir state;
  BuildOptions options;
  options.variant = ImageVariant::kSmall;
  options.state_dir = state.path();
  REQUIRE(MakeDirs(state.path() + "/archives"));
  std::string base = state.path() + "/archives/python-small-small-trixie";
  REQUIRE(WriteFile(base + ".tar", "0123456789"));
  json record = {
      {"recipe_hash", RecipeHash(MakeRecipe(ImageVariant::kSmall, "trixie").value())},
      {"config_digest", "sha256:" + std::string(64, 'e')},
      {"archive_bytes", 10},
      {"layer_bytes", 5},
      {"reference", "mcp-sandbox/python-small:latest"},
  };
  REQUIRE(WriteFile(base + ".json", record.dump()));

  auto cached = FindCachedBuild(options);
  REQUIRE(cached);
  REQUIRE(cached->has_value());
  CHECK((*cached)->archive_path == base + ".tar");
  CHECK((*cached)->config_digest == "sha256:" + std::string(64, 'e'));
  CHECK((*cached)->reused);

  // Another name, variant or suite has its own archive.
  BuildOptions other = options;
  other.suite = "bookworm";
  CHECK_FALSE(FindCachedBuild(other).value().has_value());
  other = options;
  other.name = "mine";
  CHECK_FALSE(FindCachedBuild(other).value().has_value());

  // A truncated archive is not reused.
  REQUIRE(WriteFile(base + ".tar", "01234"));
  CHECK_FALSE(FindCachedBuild(options).value().has_value());
  REQUIRE(WriteFile(base + ".tar", "0123456789"));

  // A record of another recipe is not reused.
  record["recipe_hash"] = std::string(64, '0');
  REQUIRE(WriteFile(base + ".json", record.dump()));
  CHECK_FALSE(FindCachedBuild(options).value().has_value());

  // A damaged record is ignored, not an error.
  REQUIRE(WriteFile(base + ".json", "{not json"));
  auto damaged = FindCachedBuild(options);
  REQUIRE(damaged);
  CHECK_FALSE(damaged->has_value());
}

// Only the small documents and the layer are worth keeping in memory.
bool KeepOuterData(const std::string&) { return true; }
bool KeepLayerData(const std::string& name) {
  return name == "etc/passwd" || name == "etc/group" || name == "etc/hostname";
}

TEST_CASE("image build --variant small: a valid OCI and docker archive, imported, idempotent",
          "[image]") {
  if (::geteuid() != 0) {
    testing::SkipTest(
        "building an image runs mmdebstrap --mode=root here; run the suite as root "
        "(as a user it needs --mode=unshare with subordinate ids)");
  }
  if (testing::RunShell("command -v mmdebstrap >/dev/null && command -v skopeo >/dev/null") != 0) {
    testing::SkipTest("mmdebstrap or skopeo is not installed (apt-get install mmdebstrap skopeo)");
  }
  TempDir state;
  ImageStore store(state.path());
  std::string copy = state.Join("copy.tar");
  // The build dir of a build that was killed; the next build removes it.
  REQUIRE(MakeDirs(state.path() + "/archives/python-small-small-trixie.build-Killed/x"));
  std::string out;
  auto started = std::chrono::steady_clock::now();
  REQUIRE(RunBuild({"--variant", "small", "--output", copy}, store, &out) == 0);
  double build_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << "small variant built and imported in " << build_seconds << " s\n";
  CHECK(out.find("python-small") != std::string::npos);

  const std::string archive = state.path() + "/archives/python-small-small-trixie.tar";
  // What a build leaves in the archive cache: the archive, its record, mmdebstrap's log and the
  // lock file; no build directory.
  std::string listing;
  testing::RunShell("ls -A " + state.path() + "/archives", &listing);
  CHECK(listing ==
        "python-small-small-trixie.json\npython-small-small-trixie.lock\n"
        "python-small-small-trixie.log\npython-small-small-trixie.tar\n");
  auto record =
      json::parse(ReadFile(state.path() + "/archives/python-small-small-trixie.json").value());
  CHECK(ReadFile(copy).value() == ReadFile(archive).value());

  {  // skopeo reads it as oci-archive and as docker-archive
    for (const std::string transport : {"oci-archive:", "docker-archive:"}) {
      INFO(transport);
      std::string output;
      REQUIRE(testing::RunShell("skopeo inspect --config " + transport + archive + " 2>&1",
                                &output) == 0);
      json config = json::parse(output);
      auto env = config["config"]["Env"].get<std::vector<std::string>>();
      CHECK(std::find(env.begin(), env.end(), "MPLBACKEND=Agg") != env.end());
      CHECK(std::find(env.begin(), env.end(), "HOME=/tmp") != env.end());
      CHECK(config["config"]["User"] == "1000:1000");
      CHECK(config["config"]["WorkingDir"] == "/mnt/data");
      CHECK(config["config"]["Labels"]["io.mcp-sandbox.recipe"] == record["recipe_hash"]);
    }
  }

  {  // the layer: the sandbox user, mount points, trimmed docs, no privileges
    auto outer = testing::AsMap(testing::ReadTar(archive, KeepOuterData));
    auto manifest = json::parse(outer.at("manifest.json").data);
    std::string layer_name = manifest[0]["Layers"][0];
    std::string layer_path = state.Join("layer.tar");
    REQUIRE(WriteFile(layer_path, outer.at(layer_name).data));
    outer.clear();
    auto entries = testing::ReadTar(layer_path, KeepLayerData);
    auto layer = testing::AsMap(entries);

    CHECK(layer.at("etc/passwd").data.find("\nsandbox:x:1000:1000:sandbox:/home/sandbox:") !=
          std::string::npos);
    CHECK(layer.at("etc/group").data.find("\nsandbox:x:1000:") != std::string::npos);
    CHECK(layer.at("etc/hostname").data == "sandbox\n");
    CHECK(layer.at("mnt/data/").uid == 1000);
    CHECK(layer.at("mnt/data/").gid == 1000);
    CHECK(layer.at("home/sandbox/").uid == 1000);
    CHECK(layer.at("tmp/").perm == 01777);
    for (const char* dir : {"proc/", "dev/", "sys/", "mnt/wheelhouse/", ".sandbox/"}) {
      INFO(dir);
      CHECK(layer.at(dir).type == AE_IFDIR);
    }
    CHECK(layer.count("usr/bin/python3") == 1);
    size_t copyrights = 0;
    std::vector<std::string> unwanted;  // "why: name"
    for (const auto& [name, entry] : entries) {
      auto under = [&name = name](std::string_view dir) {
        return name.size() > dir.size() && name.compare(0, dir.size(), dir) == 0;
      };
      if (under("usr/share/man/") || under("usr/share/info/") || under("var/lib/apt/lists/") ||
          under("var/cache/apt/")) {
        unwanted.push_back("trimmed dir: " + name);
      }
      if (name.find("EXTERNALLY-MANAGED") != std::string::npos)
        unwanted.push_back("pep668: " + name);
      if (under("usr/share/doc/") && entry.type != AE_IFDIR) {
        if (name.size() > 10 && name.substr(name.size() - 10) == "/copyright") {
          ++copyrights;
        } else {
          unwanted.push_back("doc: " + name);
        }
      }
      if (under("usr/share/locale/") && name != "usr/share/locale/locale.alias") {
        unwanted.push_back("locale: " + name);
      }
      if (entry.type == AE_IFCHR || entry.type == AE_IFBLK) unwanted.push_back("device: " + name);
      if (entry.type == AE_IFREG && (entry.perm & 06000) != 0) unwanted.push_back("setid: " + name);
    }
    CHECK(unwanted == std::vector<std::string>{});
    CHECK(copyrights > 10);  // licence files stay
  }

  {  // the store holds it, and its python runs
    auto stored = store.Find("python-small");
    REQUIRE(stored);
    CHECK(stored->digest == record["config_digest"].get<std::string>());
    std::string output;
    REQUIRE(testing::RunShell("chroot " + stored->rootfs +
                                  " /usr/bin/python3 -c 'import sys; print(sys.version_info[:2])'",
                              &output) == 0);
    if (record["suite"] == "trixie") CHECK(output == "(3, 13)\n");
  }

  {  // a second build with the same recipe does nothing, quickly
    auto again = std::chrono::steady_clock::now();
    REQUIRE(RunBuild({"--variant", "small"}, store, &out) == 0);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - again).count();
    CHECK(out.find("up to date") != std::string::npos);
    CHECK(seconds < 5);
    CHECK(store.Find("python-small").value().digest == record["config_digest"].get<std::string>());
  }
}

}  // namespace
}  // namespace sandbox::rootfs::image_build_test
