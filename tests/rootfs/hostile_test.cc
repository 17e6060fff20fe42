// Hostile archives, each crafted by the test: every rule of safe_extract.h is shown refusing
// the import or neutralizing the entry, and nothing is ever written outside the store (a
// sentinel directory outside stays exactly as it was).
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "tests/rootfs/archive_fixture.h"
#include "tests/rootfs/tree_snapshot.h"
#include "tests/support/test_support.h"

using namespace sandbox;
using namespace sandbox::testing;
using rootfs::ImageStore;

namespace {

// One import of crafted layers into a fresh store, with a sentinel directory next to it.
class HostileImport {
 public:
  HostileImport() {
    REQUIRE(WriteFile(outside_.Join("secret"), "do not touch"));
    REQUIRE(MakeDirs(outside_.Join("dir")));
    before_ = Snapshot(outside_.path());
  }
  ~HostileImport() {
    // Nothing outside the store changed, whatever the archive tried.
    Tree after = Snapshot(outside_.path());
    INFO("outside the store:\n" << DiffTrees(before_, after));
    CHECK(after == before_);
    // Failed or not, no half image and no temp dir is left in the store.
    std::string listing;
    RunShell("ls -A " + state_.path() + "/images 2>/dev/null | grep '^\\.tmp-' || true", &listing);
    CHECK(listing.empty());
  }

  const std::string& outside() const { return outside_.path(); }
  // An absolute path into the sentinel directory, without its leading '/'.
  std::string OutsideRelative(const std::string& name) const {
    return outside_.path().substr(1) + "/" + name;
  }

  Result<rootfs::StoredImage> Import(const std::vector<std::string>& layers,
                                     rootfs::ImportOptions options = {},
                                     Codec codec = Codec::kNone) {
    ImageSpec spec;
    spec.layers = layers;
    spec.codec = codec;
    return ImportSpec(spec, options);
  }

  Result<rootfs::StoredImage> ImportSpec(const ImageSpec& spec,
                                         rootfs::ImportOptions options = {}) {
    std::string dir = work_.Join("image-" + std::to_string(++count_));
    WriteLayoutDir(OciLayout(spec).layout, dir);
    return ImageStore(state_.path()).Import(dir, options);
  }

  Result<rootfs::StoredImage> ImportFile(const std::string& path) {
    return ImageStore(state_.path()).Import(path);
  }

  std::string WorkPath(const std::string& name) const { return work_.Join(name); }

 private:
  TempDir outside_;
  TempDir state_;
  TempDir work_;
  Tree before_;
  int count_ = 0;
};

void ExpectRefused(const Result<rootfs::StoredImage>& result, const std::string& why) {
  REQUIRE_FALSE(result);
  INFO(result.error().message);
  CHECK_THAT(result.error().message, Catch::Contains(why));
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("'..' in entry names refuses the import") {
  HostileImport h;
  ExpectRefused(h.Import({MakeTar({File("../../../../../../escape", "x")})}), "'..'");
  ExpectRefused(h.Import({MakeTar({Dir("a/"), File("a/../../escape", "x")})}), "'..'");
  // In a hardlink target too.
  ExpectRefused(h.Import({MakeTar({Hardlink("h", "../../../../" + h.OutsideRelative("secret"))})}),
                "'..'");
}

TEST_CASE("absolute entry names are taken relative to the image root") {
  HostileImport h;
  const std::string name = h.outside() + "/dir/planted";
  auto image = h.Import({MakeTar({File(name, "payload")})});
  REQUIRE(image);
  CHECK(ReadBytes(image->rootfs + name) == "payload");  // inside the rootfs
  CHECK_FALSE(Exists(name));                            // not outside
}

TEST_CASE("a NUL inside a pax path ends the name: nothing after it is used") {
  HostileImport h;
  // libarchive's writer cannot write this; python's tarfile writes the pax record verbatim.
  const std::string tar = h.WorkPath("nul.tar");
  std::string script =
      "import io, sys, tarfile\n"
      "ti = tarfile.TarInfo('plain'); ti.size = 7\n"
      "ti.pax_headers = {'path': 'a\\x00/../../../../../../' + sys.argv[2] + '/dir/nul'}\n"
      "with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as tf:\n"
      "    tf.addfile(ti, io.BytesIO(b'payload'))\n";
  REQUIRE(WriteFile(h.WorkPath("nul.py"), script));
  std::string output;
  REQUIRE(RunShell(
              "python3 " + h.WorkPath("nul.py") + " " + tar + " " + h.outside().substr(1) + " 2>&1",
              &output) == 0);
  auto image = h.Import({ReadBytes(tar)});
  REQUIRE(image);
  CHECK(ReadBytes(image->rootfs + "/a") == "payload");
  CHECK_FALSE(Exists(h.outside() + "/dir/nul"));
}

TEST_CASE("a symlink made by an earlier entry cannot redirect a write outside") {
  HostileImport h;
  SECTION("absolute symlink, same layer") {
    auto image = h.Import(
        {MakeTar({Symlink("a", h.outside()), File("a/x", "x"), File("a/secret", "overwritten?")})});
    REQUIRE(image);
    // Resolved as after chroot: the writes land at <rootfs>/<outside>/..., inside the store.
    CHECK(ReadBytes(image->rootfs + h.outside() + "/x") == "x");
    CHECK(ReadBytes(image->rootfs + h.outside() + "/secret") == "overwritten?");
  }
  SECTION("relative symlink climbing above the root, same layer") {
    auto image = h.Import({MakeTar({Symlink("up", "../../../../../../../../../../.."),
                                    File("up" + h.outside() + "/dir/x", "x")})});
    REQUIRE(image);
    CHECK(ReadBytes(image->rootfs + h.outside() + "/dir/x") == "x");
  }
  SECTION("symlink in a lower layer, write in an upper layer") {
    auto image = h.Import({MakeTar({Symlink("a", h.outside() + "/dir")}),
                           MakeTar({File("a/x", "x"), Dir("a/sub/"), File("a/sub/y", "y")})});
    REQUIRE(image);
    CHECK(ReadBytes(image->rootfs + h.outside() + "/dir/x") == "x");
    CHECK(ReadBytes(image->rootfs + h.outside() + "/dir/sub/y") == "y");
  }
  SECTION("a dangling symlink parent gets its target created inside the root") {
    auto image =
        h.Import({MakeTar({Symlink("lib64", "usr/lib64"), File("lib64/ld.so", "ld"),
                           Symlink("abs", h.outside() + "/new/dir"), File("abs/f", "f")})});
    REQUIRE(image);
    CHECK(ReadBytes(image->rootfs + "/usr/lib64/ld.so") == "ld");
    CHECK(ReadBytes(image->rootfs + h.outside() + "/new/dir/f") == "f");
    CHECK_FALSE(Exists(h.outside() + "/new"));
  }
  SECTION("a leaf that is a symlink is replaced, never written through") {
    auto image = h.Import(
        {MakeTar({Symlink("f", h.outside() + "/secret")}), MakeTar({File("f", "replaced")})});
    REQUIRE(image);
    CHECK(ReadBytes(image->rootfs + "/f") == "replaced");
    struct stat st {};
    REQUIRE(::lstat((image->rootfs + "/f").c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
  }
  SECTION("a directory symlink under a parent that is replaced later") {
    auto image = h.Import({MakeTar({Dir("d/"), File("d/f", "1")}),
                           MakeTar({Symlink("d", h.outside()), File("d/g", "2")})});
    REQUIRE(image);
    CHECK(ReadBytes(image->rootfs + h.outside() + "/g") == "2");
  }
}

TEST_CASE("hardlinks only to regular files already inside the root") {
  HostileImport h;
  SECTION("to an absolute path outside: resolved in the root, where it does not exist") {
    auto image = h.Import({MakeTar({Hardlink("h", h.outside() + "/secret")})});
    REQUIRE(image);
    CHECK_FALSE(Exists(image->rootfs + "/h"));
  }
  SECTION("through a symlink pointing outside") {
    auto image = h.Import({MakeTar({Symlink("s", h.outside()), Hardlink("h", "s/secret")})});
    REQUIRE(image);
    CHECK_FALSE(Exists(image->rootfs + "/h"));
  }
  SECTION("to a symlink") {
    auto image = h.Import({MakeTar({Symlink("l", "/etc/passwd"), Hardlink("h", "l")})});
    REQUIRE(image);
    CHECK_FALSE(Exists(image->rootfs + "/h"));
  }
  SECTION("to a device node (never created) or a directory") {
    auto image = h.Import({MakeTar({Dir("dev/"), Special("dev/sda", TarEntry::Kind::kBlockDevice),
                                    Hardlink("h", "dev/sda"), Dir("d/"), Hardlink("hd", "d")})});
    REQUIRE(image);
    CHECK_FALSE(Exists(image->rootfs + "/h"));
    CHECK_FALSE(Exists(image->rootfs + "/hd"));
  }
  SECTION("to a regular file inside: a real hardlink") {
    auto image = h.Import({MakeTar({File("f", "content"), Hardlink("h", "/f")})});
    REQUIRE(image);
    struct stat a {
    }, b{};
    REQUIRE(::lstat((image->rootfs + "/f").c_str(), &a) == 0);
    REQUIRE(::lstat((image->rootfs + "/h").c_str(), &b) == 0);
    CHECK(a.st_ino == b.st_ino);
  }
}

TEST_CASE("device nodes and fifos are never created, and still replace lower entries") {
  HostileImport h;
  auto image = h.Import({MakeTar({Dir("x/"), File("x/null", "lower file")}),
                         MakeTar({Special("x/null", TarEntry::Kind::kCharDevice),
                                  Special("x/sda", TarEntry::Kind::kBlockDevice),
                                  Special("x/fifo", TarEntry::Kind::kFifo)})});
  REQUIRE(image);
  Tree tree = Snapshot(image->rootfs + "/x");
  CHECK(tree.empty());
}

TEST_CASE("setuid and setgid bits are stripped, the sticky bit kept") {
  HostileImport h;
  auto image =
      h.Import({MakeTar({File("suid", "x", 04755), File("sgid", "x", 02755),
                         File("both", "x", 06711), Dir("gdir/", 02775), Dir("tmp2/", 01777)})});
  REQUIRE(image);
  Tree tree = Snapshot(image->rootfs, MountPointPaths());
  CHECK(tree["suid"] == F("x", 0755));
  CHECK(tree["sgid"] == F("x", 0755));
  CHECK(tree["both"] == F("x", 0711));
  CHECK(tree["gdir"] == D(0775));
  CHECK(tree["tmp2"] == D(01777));
}

TEST_CASE("file capabilities, trusted.* and security.* xattrs are dropped, user.* kept") {
  HostileImport h;
  TarEntry file = File("bin/ping", "x", 0755);
  // A VFS_CAP_REVISION_2 capability blob granting cap_net_raw, as setcap would write it.
  const std::string capability(
      "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00",
      20);
  file.xattrs = {{"security.capability", capability},
                 {"trusted.overlay.opaque", "y"},
                 {"security.selinux", "system_u:object_r:bin_t:s0"},
                 {"user.note", "kept"}};
  TarEntry dir = Dir("d/");
  dir.xattrs = {{"trusted.overlay.redirect", "/etc"}, {"user.dirnote", "kept"}};
  auto image = h.Import({MakeTar({Dir("bin/"), file, dir})});
  REQUIRE(image);
  const std::string path = image->rootfs + "/bin/ping";
  char value[64];
  for (const char* name : {"security.capability", "trusted.overlay.opaque"}) {
    CAPTURE(name);
    CHECK(::lgetxattr(path.c_str(), name, value, sizeof value) == -1);
  }
  CHECK(::lgetxattr((image->rootfs + "/d").c_str(), "trusted.overlay.redirect", value,
                    sizeof value) == -1);
  // security.selinux may be set by the host's own policy, never to the archive's value.
  ssize_t n = ::lgetxattr(path.c_str(), "security.selinux", value, sizeof value);
  CHECK((n < 0 || std::string(value, static_cast<size_t>(n)).find("bin_t") == std::string::npos));
  n = ::lgetxattr(path.c_str(), "user.note", value, sizeof value);
  if (n >= 0) CHECK(std::string(value, static_cast<size_t>(n)) == "kept");  // fs permitting
}

TEST_CASE("caps: file size, entry count, path length, total bytes") {
  HostileImport h;
  rootfs::ImportOptions options;
  SECTION("a file larger than the cap") {
    options.max_file_bytes = 1024;
    ExpectRefused(h.Import({MakeTar({File("big", std::string(4096, 'x'))})}, options),
                  "exceeds the cap");
    CHECK(h.Import({MakeTar({File("small", std::string(1024, 'x'))})}, options));
  }
  SECTION("more entries than the cap, counted over all layers") {
    options.max_entries = 10;
    std::vector<TarEntry> entries;
    for (int i = 0; i < 6; ++i) entries.push_back(File("f" + std::to_string(i), "x"));
    std::string layer = MakeTar(entries);
    ExpectRefused(h.Import({layer, layer}, options), "more than 10 entries");
    CHECK(h.Import({layer}, options));
  }
  SECTION("a path longer than the cap, or a symlink target") {
    std::string deep;
    while (deep.size() < 5000) deep += std::string(200, 'd') + "/";
    ExpectRefused(h.Import({MakeTar({File(deep + "f", "x")})}), "longer than 4096");
    options.max_path_bytes = 100;
    ExpectRefused(h.Import({MakeTar({Symlink("l", std::string(200, 't'))})}, options),
                  "longer than 100");
  }
  SECTION("a gzip bomb stops at the total cap, not at the end of the disk") {
    options.max_total_bytes = 1 << 20;
    std::string layer = MakeTar({File("zeros", std::string(16 << 20, '\0'))});
    ImageSpec spec;
    spec.layers = {layer};
    spec.codec = Codec::kGzip;
    ExpectRefused(h.ImportSpec(spec, options), "compression bomb");
    // The same cap holds over several layers.
    options.max_total_bytes = 3 << 20;
    std::string two_mib = MakeTar({File("f", std::string(2 << 20, 'a'))});
    spec.layers = {two_mib, two_mib};
    ExpectRefused(h.ImportSpec(spec, options), "cap");
  }
}

TEST_CASE("whiteout abuse is refused or stays inside the root") {
  HostileImport h;
  for (const char* bad : {".wh.", "a/.wh..", "a/.wh...", ".wh../x", "a/.wh.b/c"}) {
    CAPTURE(bad);
    ExpectRefused(h.Import({MakeTar({Dir("a/"), File("a/b", "x")}), MakeTar({File(bad, "")})}),
                  "whiteout");
  }
  SECTION("a whiteout through a symlink deletes inside the root only") {
    auto image =
        h.Import({MakeTar({Symlink("a", h.outside())}), MakeTar({File("a/.wh.secret", "")})});
    REQUIRE(image);
  }
  SECTION("an opaque marker through a symlink empties nothing outside") {
    auto image =
        h.Import({MakeTar({Symlink("a", h.outside())}), MakeTar({File("a/.wh..wh..opq", "")})});
    REQUIRE(image);
  }
  SECTION("an opaque marker at the top hides all lower entries") {
    auto image = h.Import({MakeTar({File("lower", "x"), Dir("d/"), File("d/f", "y")}),
                           MakeTar({File("upper", "z"), File(".wh..wh..opq", "")})});
    REQUIRE(image);
    Tree tree = Snapshot(image->rootfs, MountPointPaths());
    INFO(DiffTrees(Tree{{"upper", F("z")}}, tree));
    CHECK(tree == Tree{{"upper", F("z")}});
  }
}

TEST_CASE("other malformed layers are refused") {
  HostileImport h;
  ExpectRefused(h.Import({MakeTar({File("f", "x"), File("f/g", "y")})}), "not a directory");
  ExpectRefused(h.Import({MakeTar({Symlink("./", "/")})}), "root entry");
  ExpectRefused(h.Import({"this is not a tar archive at all, just text....................."}),
                "layer");
  // A truncated gzip layer.
  ImageSpec spec;
  spec.layers = {MakeTar({File("f", std::string(100000, 'x'))})};
  spec.codec = Codec::kGzip;
  BuiltImage image = OciLayout(spec);
  for (auto& [path, content] : image.layout.files) {
    if (path.find(image.layer_hexes[0]) != std::string::npos) content.resize(content.size() / 2);
  }
  WriteLayoutDir(image.layout, h.WorkPath("truncated"));
  REQUIRE_FALSE(h.ImportFile(h.WorkPath("truncated")));
}

TEST_CASE("blob digests, diff_ids and missing blobs are checked") {
  HostileImport h;
  ImageSpec spec;
  spec.layers = {MakeTar({File("a", "payload one")}), MakeTar({File("b", "payload two")})};
  for (Codec codec : {Codec::kNone, Codec::kGzip}) {
    spec.codec = codec;
    CAPTURE(static_cast<int>(codec));
    ImageSpec corrupt = spec;
    corrupt.corrupt_blob = 1;
    ExpectRefused(h.ImportSpec(corrupt), "digest mismatch");
    ImageSpec wrong_diff = spec;
    wrong_diff.wrong_diff_id = 0;
    ExpectRefused(h.ImportSpec(wrong_diff), "diff_id mismatch");
    ImageSpec missing = spec;
    missing.missing_blob = 1;
    ExpectRefused(h.ImportSpec(missing), "sha256:" + OciLayout(spec).layer_hexes[1]);
  }
  // Legacy docker save has no blob digests: the diff_id still catches a changed layer.
  spec.codec = Codec::kNone;
  spec.wrong_diff_id = 1;
  WriteLayoutTar(DockerSaveLegacy(spec).layout, h.WorkPath("legacy.tar"));
  ExpectRefused(h.ImportFile(h.WorkPath("legacy.tar")), "diff_id mismatch");
  spec.wrong_diff_id.reset();
  spec.missing_blob = 0;
  WriteLayoutTar(DockerSaveLegacy(spec).layout, h.WorkPath("legacy-missing.tar"));
  ExpectRefused(h.ImportFile(h.WorkPath("legacy-missing.tar")), "missing");
  // A config whose bytes do not match its digest.
  spec.missing_blob.reset();
  BuiltImage image = OciLayout(spec);
  image.layout.files["blobs/sha256/" + image.config_hex] += " ";
  WriteLayoutDir(image.layout, h.WorkPath("bad-config"));
  ExpectRefused(h.ImportFile(h.WorkPath("bad-config")), "image config");
}

TEST_CASE("the outer archive's own links are resolved in memory, never followed on disk") {
  HostileImport h;
  ImageSpec spec;
  spec.layers = {MakeTar({File("a", "payload")})};
  BuiltImage image = DockerSaveLegacy(spec, /*podman_links=*/true);
  // Point the layer at a file outside through an absolute symlink in the outer tar: it is
  // looked up inside the archive (where it does not exist), not on the host.
  for (auto& [path, target] : image.layout.symlinks) target = h.outside() + "/secret";
  WriteLayoutTar(image.layout, h.WorkPath("outer-links.tar"));
  ExpectRefused(h.ImportFile(h.WorkPath("outer-links.tar")), "missing");
  // A layout directory whose blob is a symlink to a host file: resolved inside the layout.
  ImageSpec plain;
  plain.layers = {MakeTar({File("a", "payload")})};
  BuiltImage dir_image = OciLayout(plain);
  std::string dir = h.WorkPath("linked-layout");
  WriteLayoutDir(dir_image.layout, dir);
  std::string blob = dir + "/blobs/sha256/" + dir_image.layer_hexes[0];
  REQUIRE(::unlink(blob.c_str()) == 0);
  REQUIRE(::symlink((h.outside() + "/secret").c_str(), blob.c_str()) == 0);
  ExpectRefused(h.ImportFile(dir), "missing");
}
