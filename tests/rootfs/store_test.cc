// The image store: names, list, remove, re-import without unpacking, racing imports,
// interrupted imports, mount points; and the `image` command line.
#include "rootfs/store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "runtime/base/files.h"
#include "tests/rootfs/archive_fixture.h"
#include "tests/rootfs/tree_snapshot.h"
#include "tests/support/test_support.h"

using namespace sandbox;
using namespace sandbox::testing;
using rootfs::ImageStore;

namespace {

// An OCI layout of a small image, different for each `seed`.
std::string MakeImage(const TempDir& work, const std::string& label, int seed,
                      const std::string& ref_name = "test:1", int files = 3) {
  std::vector<TarEntry> entries = {Dir("etc/"), File("etc/seed", std::to_string(seed))};
  entries.push_back(Dir("data/"));
  for (int i = 0; i < files; ++i) {
    entries.push_back(
        File("data/f" + std::to_string(i), std::string(100, static_cast<char>('a' + i % 26))));
  }
  ImageSpec spec;
  spec.layers = {MakeTar(entries)};
  spec.ref_name = ref_name;
  spec.codec = Codec::kGzip;
  std::string dir = work.Join(label);
  WriteLayoutDir(OciLayout(spec).layout, dir);
  return dir;
}

std::vector<std::string> ImagesDirEntries(const std::string& state_dir) {
  std::vector<std::string> names;
  std::string listing;
  RunShell("ls -A " + state_dir + "/images", &listing);
  size_t pos = 0;
  while (pos < listing.size()) {
    size_t end = listing.find('\n', pos);
    if (end == std::string::npos) end = listing.size();
    if (end > pos) names.push_back(listing.substr(pos, end - pos));
    pos = end + 1;
  }
  return names;
}

int CountImageDirs(const std::string& state_dir) {
  int count = 0;
  for (const auto& name : ImagesDirEntries(state_dir)) {
    if (name.size() == 64) ++count;
  }
  return count;
}

int CountTempDirs(const std::string& state_dir) {
  int count = 0;
  for (const auto& name : ImagesDirEntries(state_dir)) {
    if (name.rfind(".tmp-", 0) == 0) ++count;
  }
  return count;
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_ino;
}

struct CliResult {
  int status = -1;
  std::string out;
};

// Runs the `image` subcommand (tests/rootfs/image_cli_main.cc: the same code as mcp-sandbox).
CliResult Cli(const std::string& args, bool merge_stderr = false) {
  CliResult result;
  std::string command = std::string(ROOTFS_IMAGE_CLI) + " image " + args;
  command += merge_stderr ? " 2>&1" : " 2>/dev/null";
  result.status = RunShell(command + " </dev/null", &result.out);
  return result;
}

}  // namespace

TEST_CASE("names map to digests: find, list, remove") {
  TempDir work, state;
  ImageStore store(state.path());
  std::string a_dir = MakeImage(work, "a", 1, "alpha:1");
  std::string b_dir = MakeImage(work, "b", 2, "beta:1");

  auto a = store.Import(a_dir);
  REQUIRE(a);
  CHECK(a->names == std::vector<std::string>{"alpha:1"});
  CHECK_FALSE(a->reused);
  rootfs::ImportOptions named;
  named.name = "bravo";
  auto b = store.Import(b_dir, named);
  REQUIRE(b);
  CHECK(b->names == std::vector<std::string>{"bravo"});
  CHECK(b->digest != a->digest);
  CHECK(b->size_bytes >= 300);
  CHECK(b->rootfs == state.path() + "/images/" + b->digest.substr(7) + "/rootfs");
  // A second name for the same image; and re-pointing a name moves it.
  named.name = "bravo:latest";
  REQUIRE(store.Import(b_dir, named));
  named.name = "moving";
  REQUIRE(store.Import(a_dir, named));
  REQUIRE(store.Import(b_dir, named));

  auto list = store.List();
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  for (const auto& image : *list) {
    if (image.digest == a->digest) CHECK(image.names == std::vector<std::string>{"alpha:1"});
    if (image.digest == b->digest) {
      CHECK(image.names == std::vector<std::string>{"bravo", "bravo:latest", "moving"});
    }
  }

  CHECK(store.Find("alpha:1")->digest == a->digest);
  CHECK(store.Find(a->digest)->digest == a->digest);
  CHECK(store.Find(a->digest.substr(7, 12))->digest == a->digest);
  CHECK(store.Find("moving")->digest == b->digest);
  auto missing = store.Find("nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK_FALSE(store.Find("sha256:" + std::string(64, '0')));

  // Removing one name of several keeps the image; the last name takes it.
  REQUIRE(store.Remove("bravo"));
  REQUIRE(store.Remove("moving"));
  REQUIRE(store.Find(b->digest));
  REQUIRE(store.Remove("bravo:latest"));
  CHECK_FALSE(store.Find(b->digest));
  CHECK_FALSE(::access(b->rootfs.c_str(), F_OK) == 0);
  // Removing by digest takes the image and all its names.
  REQUIRE(store.Remove(a->digest));
  CHECK_FALSE(store.Find("alpha:1"));
  CHECK(store.List()->empty());
  CHECK(CountImageDirs(state.path()) == 0);
  CHECK(CountTempDirs(state.path()) == 0);
  CHECK_FALSE(store.Remove("alpha:1"));

  named.name = "bad name with spaces";
  CHECK_FALSE(store.Import(a_dir, named));
}

TEST_CASE("a name without a tag finds name:latest, as docker does") {
  TempDir work, state;
  ImageStore store(state.path());
  rootfs::ImportOptions options;
  options.name = "python:latest";
  auto image = store.Import(MakeImage(work, "p", 3), options);
  REQUIRE(image);
  CHECK(store.Find("python")->digest == image->digest);
  REQUIRE(store.Remove("python"));
  CHECK_FALSE(store.Find("python:latest"));
}

TEST_CASE("importing a stored image does not unpack it again") {
  TempDir work, state;
  ImageStore store(state.path());
  std::string dir = MakeImage(work, "img", 4, "test:1", 200);
  auto first = store.Import(dir);
  REQUIRE(first);
  ino_t rootfs_inode = Inode(first->rootfs);
  ino_t file_inode = Inode(first->rootfs + "/data/f7");
  auto entries_before = ImagesDirEntries(state.path());

  int progress_calls = 0;
  rootfs::ImportOptions options;
  options.progress = [&](const rootfs::ImportProgress&) { ++progress_calls; };
  auto again = store.Import(dir, options);
  REQUIRE(again);
  CHECK(again->reused);
  CHECK(again->digest == first->digest);
  CHECK(progress_calls == 0);  // no layer was read
  CHECK(Inode(again->rootfs) == rootfs_inode);
  CHECK(Inode(again->rootfs + "/data/f7") == file_inode);
  CHECK(ImagesDirEntries(state.path()) == entries_before);
  // Also from another packaging of the same image (same config digest).
  ImageSpec spec;
  spec.layers = {Decompress(
      ReadBytes(dir + "/blobs/sha256/" +
                nlohmann::json::parse(ReadBytes(
                    dir + "/blobs/sha256/" +
                    nlohmann::json::parse(ReadBytes(dir + "/index.json"))["manifests"][0]["digest"]
                        .get<std::string>()
                        .substr(7)))["layers"][0]["digest"]
                    .get<std::string>()
                    .substr(7)))};
  WriteLayoutTar(DockerSaveLegacy(spec).layout, work.Join("legacy.tar"));
  auto legacy = store.Import(work.Join("legacy.tar"), options);
  REQUIRE(legacy);
  CHECK(legacy->reused);
  CHECK(Inode(legacy->rootfs + "/data/f7") == file_inode);
}

TEST_CASE("two imports of the same image racing: both succeed, one copy stored") {
  TempDir work, state;
  std::string dir = MakeImage(work, "img", 5, "race:1", 2000);
  SECTION("threads") {
    Result<rootfs::StoredImage> results[2];
    std::thread threads[2];
    for (int i = 0; i < 2; ++i) {
      threads[i] = std::thread([&, i] { results[i] = ImageStore(state.path()).Import(dir); });
    }
    for (auto& thread : threads) thread.join();
    REQUIRE(results[0]);
    REQUIRE(results[1]);
    CHECK(results[0]->digest == results[1]->digest);
    CHECK((results[0]->reused || results[1]->reused));  // one waited for the other
  }
  SECTION("processes (the command line)") {
    std::string command = std::string(ROOTFS_IMAGE_CLI) + " image import " + dir + " --state-dir " +
                          state.path() + " >/dev/null 2>&1";
    std::string output;
    int status =
        RunShell("(" + command + " & " + command + " & wait %1 && wait %2) && echo ok", &output);
    CHECK(status == 0);
    CHECK(output == "ok\n");
  }
  CHECK(CountImageDirs(state.path()) == 1);
  CHECK(CountTempDirs(state.path()) == 0);
  auto image = ImageStore(state.path()).Find("race:1");
  REQUIRE(image);
  CHECK(Snapshot(image->rootfs + "/data").size() == 2000);
}

TEST_CASE("an interrupted import leaves no half image, and the next import cleans up") {
  TempDir work, state;
  std::string dir = MakeImage(work, "img", 6, "interrupted:1", 500);
  int ready[2];
  REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Stop for good in the middle of unpacking, until killed.
    rootfs::ImportOptions options;
    options.progress = [&](const rootfs::ImportProgress&) {
      char byte = 'x';
      if (::write(ready[1], &byte, 1) != 1) ::_exit(1);  // the parent then sees no byte
      for (;;) ::pause();
    };
    (void)ImageStore(state.path()).Import(dir, options);
    ::_exit(1);
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  CHECK(CountTempDirs(state.path()) == 1);  // the staging dir exists...
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);

  ImageStore store(state.path());
  CHECK(store.List()->empty());  // ...but no image is visible
  CHECK_FALSE(store.Find("interrupted:1"));
  CHECK(CountImageDirs(state.path()) == 0);
  auto image = store.Import(dir);
  REQUIRE(image);
  CHECK_FALSE(image->reused);
  CHECK(CountTempDirs(state.path()) == 0);  // the killed import's leftovers are gone
  CHECK(Snapshot(image->rootfs + "/data").size() == 500);
}

TEST_CASE("every rootfs gets real directories at the sandbox's mount points") {
  TempDir work, state;
  ImageSpec spec;
  spec.layers = {MakeTar({Dir("var/"), Dir("var/tmp/", 01777), Symlink("tmp", "var/tmp"),
                          File("mnt", "a file where a directory must be"), Dir("proc/", 0555),
                          File("proc/stale", "x"), Symlink("sys", "/etc")})};
  WriteLayoutDir(OciLayout(spec).layout, work.Join("img"));
  auto image = ImageStore(state.path()).Import(work.Join("img"));
  REQUIRE(image);
  for (const char* mount_point : rootfs::kRootfsMountPoints) {
    CAPTURE(mount_point);
    struct stat st {};
    REQUIRE(::lstat((image->rootfs + mount_point).c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
  }
  Tree tree = Snapshot(image->rootfs);
  CHECK(tree["proc"] == D(0555));        // an existing directory keeps its mode and content
  CHECK(tree.count("proc/stale") == 1);  // (the sandbox mounts over it)
  CHECK(tree["tmp"] == D(0755));         // the symlink is replaced by a directory
  CHECK(tree["var/tmp"] == D(01777));
  CHECK(tree["mnt"] == D(0755));
  CHECK(tree["mnt/data"] == D(0755));
  CHECK(tree["sys"] == D(0755));
}

TEST_CASE("the default state dir follows SANDBOX_STATE_DIR") {
  const char* old = std::getenv("SANDBOX_STATE_DIR");
  std::string saved = old != nullptr ? old : "";
  ::setenv("SANDBOX_STATE_DIR", "/somewhere/state", 1);
  CHECK(ImageStore::DefaultStateDir() == "/somewhere/state");
  ::unsetenv("SANDBOX_STATE_DIR");
  std::string fallback = ImageStore::DefaultStateDir();
  CHECK((::geteuid() == 0 ? fallback == "/var/lib/mcp-sandbox"
                          : fallback.find("/mcp-sandbox") != std::string::npos));
  if (old != nullptr) ::setenv("SANDBOX_STATE_DIR", saved.c_str(), 1);
}

TEST_CASE("image command line: help, usage errors, import, ls, rm") {
  TempDir work, state;
  const std::string sd = " --state-dir " + state.path();
  for (const char* help : {"--help", "import --help", "ls --help", "rm --help"}) {
    CAPTURE(help);
    CliResult result = Cli(help);
    CHECK(result.status == 0);
    CHECK_THAT(result.out, Catch::Contains("mcp-sandbox image"));
    CHECK_THAT(result.out, Catch::Contains("example"));
  }
  for (const char* bad : {"", "frobnicate", "import", "import a b", "import --bogus x", "ls extra",
                          "ls --json=1", "rm", "import --name"}) {
    CAPTURE(bad);
    CliResult result = Cli(bad, /*merge_stderr=*/true);
    CHECK(result.status == 2);
  }
  // Usage errors are one line.
  CliResult usage = Cli("import --bogus x", true);
  CHECK(std::count(usage.out.begin(), usage.out.end(), '\n') == 1);

  std::string dir = MakeImage(work, "img", 7, "cli:1");
  CliResult imported = Cli("import " + dir + " --name cli-test" + sd, true);
  CHECK(imported.status == 0);
  // Not a terminal: progress is plain lines, then the result.
  CHECK_THAT(imported.out, Catch::Contains("unpacking layer 1/1\n"));
  CHECK_THAT(imported.out, Catch::Contains("imported: cli-test sha256:"));
  CHECK_THAT(Cli("import " + dir + " --name cli-test" + sd).out,
             Catch::StartsWith("already stored"));

  CliResult table = Cli("ls" + sd);
  CHECK(table.status == 0);
  CHECK_THAT(table.out, Catch::StartsWith("NAME"));
  CHECK_THAT(table.out, Catch::Contains("cli-test"));
  CliResult json = Cli("ls --json" + sd);
  REQUIRE(json.status == 0);
  auto parsed = nlohmann::json::parse(json.out, nullptr, false);
  REQUIRE(parsed.is_object());
  REQUIRE(parsed["images"].size() == 1);
  CHECK(parsed["images"][0]["names"][0] == "cli-test");
  CHECK(parsed["images"][0]["digest"].get<std::string>().rfind("sha256:", 0) == 0);
  CHECK(parsed["images"][0]["size_bytes"].get<uint64_t>() > 0);

  CHECK(Cli("import " + work.Join("missing.tar") + sd).status == 1);
  CHECK(Cli("rm nothing-here" + sd).status == 1);
  CHECK(Cli("rm cli-test" + sd).status == 0);
  CHECK(nlohmann::json::parse(Cli("ls --json" + sd).out)["images"].empty());
  // SANDBOX_STATE_DIR selects the store too.
  CHECK(RunShell("SANDBOX_STATE_DIR=" + state.path() + " " + ROOTFS_IMAGE_CLI + " image import " +
                 dir + " >/dev/null 2>&1") == 0);
  CHECK(CountImageDirs(state.path()) == 1);
}
