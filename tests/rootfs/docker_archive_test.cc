// Docker archives of stored images (rootfs/docker_archive.h): an image imported from a layered
// archive is exported, and the export is checked by importing it again with `image import` into
// a fresh store and comparing the trees file by file (type, mode, owner, mtime, content, symlink
// targets, hardlink groups), and by skopeo when it is installed. Then the cache: reuse, repair,
// racing exporters, archives of removed images.
#include "rootfs/docker_archive.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "rootfs/digest.h"
#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "tests/rootfs/archive_fixture.h"
#include "tests/support/test_support.h"

using namespace sandbox;
using namespace sandbox::testing;
using nlohmann::json;
using rootfs::ImageStore;

namespace {

TarEntry At(TarEntry entry, int64_t mtime) {
  entry.mtime = mtime;
  return entry;
}

// Two layers: whiteouts, a merged-/usr symlink written through, a file with three names, odd
// modes, a name too long for a ustar header, dangling and absolute symlinks, an empty file.
std::vector<std::string> LayeredImage() {
  const std::string deep = "deep/" + std::string(90, 'd') + "/" + std::string(60, 'e');
  std::string lower = MakeTar({
      Dir("./"),
      At(Dir("etc/"), 1'600'000'000),
      File("etc/keep", "keep"),
      File("etc/gone", "gone"),
      File("etc/secret", "0600", 0600),
      File("etc/readonly", "0444", 0444),
      File("etc/empty", ""),
      Dir("usr/"),
      Dir("usr/bin/"),
      At(File("usr/bin/tool", "#!/bin/sh\necho payload\n", 0755), 1'650'000'000),
      Hardlink("usr/bin/tool2", "usr/bin/tool"),
      Hardlink("usr/bin/tool3", "usr/bin/tool"),
      Symlink("bin", "usr/bin"),
      Symlink("dangling", "/nonexistent/target"),
      Symlink("etc/abs", "/usr/bin/tool"),
      Dir("deep/"),
      Dir("deep/" + std::string(90, 'd') + "/"),
      File(deep, "a long name"),
      Dir("private/", 0700),
      File("private/f", "in a 0700 dir"),
      Dir("ro/", 0555),
      File("ro/f", "in a read-only dir"),
      Dir("sticky/", 01777),
  });
  std::string upper = MakeTar({
      At(Dir("etc/"), 1'710'000'000), File("etc/.wh.gone", ""), File("bin/added", "added via bin/"),
      File("big", std::string(3 << 20, 'x')),  // more than one copy buffer
  });
  return {lower, upper};
}

struct FullNode {
  char type = '?';
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t mtime = 0;
  std::string content;     // files: bytes; symlinks: target
  std::string link_group;  // regular files: the first path (sorted) with the same inode
  bool operator==(const FullNode&) const = default;
};

// Every entry of `root` with all the metadata an export must keep.
std::map<std::string, FullNode> FullSnapshot(const std::string& root) {
  std::map<std::string, FullNode> tree;
  std::map<ino_t, std::string> first_names;
  std::vector<std::string> paths;
  for (const auto& item : std::filesystem::recursive_directory_iterator(root)) {
    paths.push_back(std::filesystem::relative(item.path(), root).string());
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    const std::string full = root + "/" + path;
    struct stat st {};
    REQUIRE(::lstat(full.c_str(), &st) == 0);
    FullNode node;
    node.uid = st.st_uid;
    node.gid = st.st_gid;
    node.mtime = st.st_mtim.tv_sec;
    node.mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
      node.type = 'd';
    } else if (S_ISLNK(st.st_mode)) {
      node.type = 'l';
      node.mode = 0;
      node.content = std::filesystem::read_symlink(full).string();
    } else if (S_ISREG(st.st_mode)) {
      node.type = 'f';
      node.content = ReadBytes(full);
      node.link_group = first_names.try_emplace(st.st_ino, path).first->second;
    }
    tree[path] = std::move(node);
  }
  return tree;
}

std::string Describe(const FullNode& n) {
  return fmt::format("{} {:o} {}:{} mtime {} link {} content {}", n.type, n.mode, n.uid, n.gid,
                     n.mtime, n.link_group, n.content.substr(0, 40));
}

void CheckSameTree(const std::string& expected_root, const std::string& actual_root) {
  auto expected = FullSnapshot(expected_root);
  auto actual = FullSnapshot(actual_root);
  std::string diff;
  for (const auto& [path, node] : expected) {
    auto it = actual.find(path);
    if (it == actual.end()) {
      diff += "missing " + path + "\n";
    } else if (!(it->second == node)) {
      diff += path + ": expected " + Describe(node) + ", got " + Describe(it->second) + "\n";
    }
  }
  for (const auto& [path, node] : actual) {
    if (expected.count(path) == 0) diff += "extra " + path + "\n";
  }
  INFO(diff);
  CHECK(diff.empty());
  CHECK(expected.size() > 20);
}

rootfs::StoredImage ImportLayered(const TempDir& work, const std::string& state_dir,
                                  const std::string& name) {
  ImageSpec spec;
  spec.layers = LayeredImage();
  spec.codec = Codec::kGzip;
  const std::string layout = work.Join("layered-" + name);
  WriteLayoutDir(OciLayout(spec).layout, layout);
  rootfs::ImportOptions options;
  options.name = name;
  auto image = ImageStore(state_dir).Import(layout, options);
  INFO((image ? "" : image.error().message));
  REQUIRE(image);
  return *image;
}

void Shell(const std::string& command, std::string* output = nullptr) {
  std::string out;
  int status = RunShell(command + " 2>&1", &out);
  INFO(command << "\n" << out);
  REQUIRE(status == 0);
  if (output != nullptr) *output = out;
}

bool HaveTool(const char* tool) {
  return RunShell(std::string("command -v ") + tool + " >/dev/null 2>&1") == 0;
}

std::vector<std::string> ArchiveFiles(const std::string& state_dir) {
  std::vector<std::string> names;
  for (const auto& item : std::filesystem::directory_iterator(state_dir + "/archives")) {
    names.push_back(item.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("a stored image exports to a docker archive that imports back to the same tree") {
  TempDir work;
  TempDir state;
  rootfs::StoredImage image = ImportLayered(work, state.path(), "layered");
  struct stat tool {};
  REQUIRE(::lstat((image.rootfs + "/usr/bin/tool").c_str(), &tool) == 0);
  REQUIRE(tool.st_nlink == 3);  // the store kept the hardlinks: the export must too

  auto archive = rootfs::EnsureDockerArchive(state.path(), image);
  INFO((archive ? "" : archive.error().message));
  REQUIRE(archive);
  const std::string hex = image.digest.substr(7);
  CHECK(archive->path == state.Join("archives/docker-" + hex + ".tar"));
  CHECK_FALSE(archive->reused);
  CHECK(archive->repo_tag == "mcp-sandbox/stored:" + hex);
  CHECK(archive->size_bytes == std::filesystem::file_size(archive->path));
  auto record = json::parse(ReadBytes(state.Join("archives/docker-" + hex + ".json")));
  CHECK(record["image_id"] == archive->image_id);
  CHECK(record["store_digest"] == image.digest);

  // Imported again by our own command line, into a fresh store: the same tree, file by file.
  TempDir state2;
  Shell(std::string(ROOTFS_IMAGE_CLI) + " image import " + archive->path + " --state-dir " +
        state2.path());
  auto reimported = ImageStore(state2.path()).Find(archive->repo_tag);
  INFO((reimported ? "" : reimported.error().message));
  REQUIRE(reimported);
  // The store names images by their config digest, which is Docker's image id.
  CHECK(reimported->digest == archive->image_id);
  CHECK(reimported->config.env == image.config.env);
  CHECK(reimported->config.working_dir == image.config.working_dir);
  CHECK(reimported->config.user == image.config.user);
  CHECK(reimported->config.cmd == image.config.cmd);
  CHECK(reimported->created == image.created);
  CHECK(reimported->size_bytes == image.size_bytes);
  CheckSameTree(image.rootfs, reimported->rootfs);

  // The config: one diff_id, the old history kept as empty layers, one entry for the layer.
  std::string listing;
  Shell("tar -tvf " + archive->path, &listing);
  INFO(listing);
  std::string config_name = archive->image_id.substr(7) + ".json";
  CHECK(listing.find(config_name) != std::string::npos);
  Shell("tar -xf " + archive->path + " -C " + work.path() + " " + config_name + " manifest.json");
  std::string config_text = ReadBytes(work.Join(config_name));
  CHECK(rootfs::Sha256Digest(rootfs::Sha256Hex(config_text)) == archive->image_id);
  auto config = json::parse(config_text);
  REQUIRE(config["rootfs"]["diff_ids"].size() == 1);
  size_t non_empty = 0;
  for (const auto& item : config["history"]) non_empty += item.value("empty_layer", false) ? 0 : 1;
  CHECK(non_empty == 1);
  auto manifest = json::parse(ReadBytes(work.Join("manifest.json")));
  REQUIRE(manifest.size() == 1);
  CHECK(manifest[0]["Config"] == config_name);
  CHECK(manifest[0]["RepoTags"] == json::array({archive->repo_tag}));

  // The same tree gives the same bytes, so the image id is stable across exports.
  auto again = rootfs::WriteDockerArchive(image, work.Join("again.tar"));
  REQUIRE(again);
  CHECK(again->image_id == archive->image_id);
  CHECK(ReadBytes(work.Join("again.tar")) == ReadBytes(archive->path));
}

TEST_CASE("skopeo reads the exported docker archive", "[tools]") {
  if (!HaveTool("skopeo")) SkipTest("skopeo is not installed");
  TempDir work;
  TempDir state;
  rootfs::StoredImage image = ImportLayered(work, state.path(), "layered");
  auto archive = rootfs::EnsureDockerArchive(state.path(), image);
  REQUIRE(archive);
  std::string out;
  Shell("skopeo inspect --config docker-archive:" + archive->path, &out);
  auto config = json::parse(out);
  CHECK(config["config"]["Env"] == json(image.config.env));
  CHECK(config["config"]["WorkingDir"] == image.config.working_dir);
  Shell("skopeo inspect docker-archive:" + archive->path, &out);
  auto inspected = json::parse(out);
  REQUIRE(inspected["Layers"].size() == 1);
  CHECK(inspected["Layers"][0] == config["rootfs"]["diff_ids"][0]);
  // skopeo copies it to an OCI layout, and that imports to the same tree too.
  Shell("skopeo copy docker-archive:" + archive->path + " oci:" + work.Join("oci") + ":img");
  TempDir state2;
  rootfs::ImportOptions options;
  options.name = "via-skopeo";
  auto copied = ImageStore(state2.path()).Import(work.Join("oci"), options);
  REQUIRE(copied);
  CheckSameTree(image.rootfs, copied->rootfs);
}

TEST_CASE("the cached docker archive is reused, rewritten when damaged, written once by racers") {
  TempDir work;
  TempDir state;
  rootfs::StoredImage image = ImportLayered(work, state.path(), "layered");
  const std::string hex = image.digest.substr(7);

  // Three exporters at once (separate lock file descriptions, as separate servers have): one
  // writes, the others wait for it and reuse its archive.
  std::vector<Result<rootfs::DockerArchive>> results(3, Fail(ErrorCode::kInternal, "not run"));
  {
    std::vector<std::thread> threads;
    for (auto& result : results) {
      threads.emplace_back([&] { result = rootfs::EnsureDockerArchive(state.path(), image); });
    }
    for (auto& thread : threads) thread.join();
  }
  int written = 0;
  for (const auto& result : results) {
    REQUIRE(result);
    written += result->reused ? 0 : 1;
    CHECK(result->image_id == results[0]->image_id);
  }
  CHECK(written == 1);
  const std::vector<std::string> expected_files = {
      "docker-" + hex + ".json", "docker-" + hex + ".lock", "docker-" + hex + ".tar"};
  CHECK(ArchiveFiles(state.path()) == expected_files);  // no temp files left

  const std::string tar = results[0]->path;
  struct stat st {};
  REQUIRE(::stat(tar.c_str(), &st) == 0);
  const ino_t inode = st.st_ino;
  auto reused = rootfs::EnsureDockerArchive(state.path(), image);
  REQUIRE(reused);
  CHECK(reused->reused);
  REQUIRE(::stat(tar.c_str(), &st) == 0);
  CHECK(st.st_ino == inode);

  // A truncated archive (a full disk, a killed copy) does not match its record: rewritten.
  std::filesystem::resize_file(tar, 4096);
  auto repaired = rootfs::EnsureDockerArchive(state.path(), image);
  REQUIRE(repaired);
  CHECK_FALSE(repaired->reused);
  CHECK(repaired->image_id == results[0]->image_id);
  CHECK(std::filesystem::file_size(tar) == repaired->size_bytes);

  // A temp file of a killed export is removed by the next export of that image.
  REQUIRE(WriteFile(tar + ".tmp-ABCDEF", "partial"));
  std::filesystem::remove(state.Join("archives/docker-" + hex + ".json"));
  REQUIRE(rootfs::EnsureDockerArchive(state.path(), image));
  CHECK(ArchiveFiles(state.path()) == expected_files);

  // Once the image leaves the store, the next export (of another image) removes its archive.
  REQUIRE(ImageStore(state.path()).Remove("layered"));
  auto gone = rootfs::EnsureDockerArchive(state.path(), image);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == ErrorCode::kNotFound);
  ImageSpec other;
  other.layers = {MakeTar({Dir("etc/"), File("etc/other", "other")})};
  WriteLayoutDir(OciLayout(other).layout, work.Join("other"));
  auto other_image = ImageStore(state.path()).Import(work.Join("other"));
  REQUIRE(other_image);
  REQUIRE(rootfs::EnsureDockerArchive(state.path(), *other_image));
  const std::string other_hex = other_image->digest.substr(7);
  CHECK(ArchiveFiles(state.path()) ==
        std::vector<std::string>{"docker-" + hex + ".lock", "docker-" + other_hex + ".json",
                                 "docker-" + other_hex + ".lock", "docker-" + other_hex + ".tar"});
}

TEST_CASE("removing an image from the store frees its docker archive and keeps the others'") {
  TempDir work;
  TempDir state;
  rootfs::StoredImage removed = ImportLayered(work, state.path(), "layered");
  ImageSpec kept_spec;
  kept_spec.layers = {MakeTar({Dir("etc/"), File("etc/kept", "kept")})};
  WriteLayoutDir(OciLayout(kept_spec).layout, work.Join("kept"));
  auto kept = ImageStore(state.path()).Import(work.Join("kept"));
  REQUIRE(kept);
  REQUIRE(rootfs::EnsureDockerArchive(state.path(), removed));
  REQUIRE(rootfs::EnsureDockerArchive(state.path(), *kept));
  CHECK(rootfs::RemoveOrphanDockerArchives(state.path()) == 0);  // both images are stored

  REQUIRE(ImageStore(state.path()).Remove("layered"));
  CHECK(rootfs::RemoveOrphanDockerArchives(state.path()) == 1);
  const std::string removed_hex = removed.digest.substr(7);
  const std::string kept_hex = kept->digest.substr(7);
  // The lock file stays: another process may hold it open.
  std::vector<std::string> expected = {
      "docker-" + kept_hex + ".json", "docker-" + kept_hex + ".lock", "docker-" + kept_hex + ".tar",
      "docker-" + removed_hex + ".lock"};
  std::sort(expected.begin(), expected.end());
  CHECK(ArchiveFiles(state.path()) == expected);
}
