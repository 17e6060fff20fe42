// init's file operations and data snapshots, called directly (no agent process).
#include "runtime/agent/init/file_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "runtime/agent/init/data_snapshot.h"
#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace file_ops_test {

using sandbox::ErrorCode;
using sandbox::agent::DataSnapshot;
using sandbox::agent::FileOps;
using sandbox::testing::TempDir;

TEST_CASE("paths are made absolute and normalized against the data dir", "[unit]") {
  FileOps files("/mnt/data", "/tmp");
  CHECK(*files.Normalize("a.csv") == "/mnt/data/a.csv");
  CHECK(*files.Normalize("") == "/mnt/data");
  CHECK(*files.Normalize("./x//y/../z") == "/mnt/data/x/z");
  CHECK(*files.Normalize("../../../etc/passwd") == "/etc/passwd");
  CHECK(*files.Normalize("/../..") == "/");
  CHECK(*files.Normalize("/tmp/./f") == "/tmp/f");
  auto nul = files.Normalize(std::string("a\0b", 3));
  REQUIRE_FALSE(nul);
  CHECK(nul.error().code == ErrorCode::kInvalidPath);
  CHECK(files.Normalize(std::string(5000, 'a')).error().code == ErrorCode::kInvalidPath);
}

TEST_CASE("write refuses what lies outside its roots, and paths through files", "[unit]") {
  TempDir dir;
  REQUIRE(sandbox::MakeDirs(dir.Join("data")));
  REQUIRE(sandbox::MakeDirs(dir.Join("tmp")));
  FileOps files(dir.Join("data"), dir.Join("tmp"));
  REQUIRE(files.Write("f.txt", "x", false, 0644));
  // f.txt is a file: nothing can be created below it.
  auto below_file = files.Write("f.txt/g", "x", true, 0644);
  REQUIRE_FALSE(below_file);
  CHECK(below_file.error().code == ErrorCode::kInvalidPath);
  // A name of the data dir's sibling that shares its prefix is not inside it.
  auto sibling = files.Write(dir.Join("data-other/x"), "x", true, 0644);
  REQUIRE_FALSE(sibling);
  CHECK(sibling.error().code == ErrorCode::kInvalidPath);
  // Overwriting a directory is refused and leaves it be.
  REQUIRE(sandbox::MakeDirs(dir.Join("data/d")));
  auto onto_dir = files.Write("d", "x", true, 0644);
  REQUIRE_FALSE(onto_dir);
  CHECK(onto_dir.error().code == ErrorCode::kInvalidPath);
  // No temp file is left behind by a failed overwrite.
  auto listing = files.List("", false, 100);
  REQUIRE(listing);
  CHECK(listing->entries.size() == 2);
}

TEST_CASE("read refuses FIFOs without blocking", "[unit]") {
  TempDir dir;
  FileOps files(dir.path(), dir.path());
  REQUIRE(::mkfifo(dir.Join("fifo").c_str(), 0600) == 0);
  auto read = files.Read("fifo", 100);
  REQUIRE_FALSE(read);
  CHECK(read.error().code == ErrorCode::kInvalidPath);
}

TEST_CASE("list caps the number of entries and says so", "[unit]") {
  TempDir dir;
  for (int i = 0; i < 10; ++i) REQUIRE(sandbox::WriteFile(dir.Join("f" + std::to_string(i)), "x"));
  FileOps files(dir.path(), dir.path());
  auto listing = files.List("", false, 4);
  REQUIRE(listing);
  CHECK(listing->entries.size() == 4);
  CHECK(listing->truncated);
}

TEST_CASE("a snapshot diff finds new and rewritten files, not untouched ones", "[unit]") {
  TempDir dir;
  REQUIRE(sandbox::WriteFile(dir.Join("same"), "1"));
  REQUIRE(sandbox::WriteFile(dir.Join("rewritten"), "1"));
  auto before = DataSnapshot::Take(dir.path());
  CHECK(before.size() == 2);
  // Same size, new content: caught by the mtime. File times come from a clock that ticks
  // once a jiffy, so a quick rewrite may keep the old one: set a later mtime explicitly.
  struct stat old_stat {};
  REQUIRE(::stat(dir.Join("rewritten").c_str(), &old_stat) == 0);
  REQUIRE(sandbox::WriteFile(dir.Join("rewritten"), "2"));
  struct timespec times[2] = {{0, UTIME_OMIT}, old_stat.st_mtim};
  times[1].tv_sec += 1;
  REQUIRE(::utimensat(AT_FDCWD, dir.Join("rewritten").c_str(), times, 0) == 0);
  REQUIRE(sandbox::MakeDirs(dir.Join("sub")));
  REQUIRE(sandbox::WriteFile(dir.Join("sub/new"), "abc"));
  REQUIRE(::symlink("same", dir.Join("link").c_str()) == 0);  // links are not artifacts
  auto changed = before.ChangedIn(DataSnapshot::Take(dir.path()));
  REQUIRE(changed.size() == 2);
  CHECK(changed[0].path == dir.Join("rewritten"));
  CHECK(changed[1].path == dir.Join("sub/new"));
  CHECK(changed[1].size == 3);
}

TEST_CASE("a snapshot counts every entry against its cap, directories included", "[unit]") {
  TempDir dir;
  // 300 directories and not one file: a cap that counted files only would walk them all.
  for (int i = 0; i < 30; ++i) {
    for (int j = 0; j < 9; ++j) {
      REQUIRE(sandbox::MakeDirs(dir.Join("d" + std::to_string(i) + "/e" + std::to_string(j))));
    }
  }
  auto capped = DataSnapshot::Take(dir.path(), 50);
  CHECK(capped.visited() == 50);
  CHECK(capped.truncated());
  CHECK(capped.size() == 0);
  auto whole = DataSnapshot::Take(dir.path());
  CHECK(whole.visited() == 300);
  CHECK_FALSE(whole.truncated());
  // Symlinks and other entries count too.
  REQUIRE(::symlink("d0", dir.Join("link").c_str()) == 0);
  REQUIRE(::mkfifo(dir.Join("fifo").c_str(), 0600) == 0);
  CHECK(DataSnapshot::Take(dir.path()).visited() == 302);
}

TEST_CASE("chunked reads: offsets, eof, the size limit judged before reading", "[unit]") {
  TempDir dir;
  FileOps files(dir.path(), dir.path());
  REQUIRE(sandbox::WriteFile(dir.Join("f"), "0123456789"));
  auto first = files.ReadChunk("f", 0, 4, 100);
  REQUIRE(first);
  CHECK(first->content == "0123");
  CHECK(first->size == 10);
  CHECK_FALSE(first->eof);
  auto last = files.ReadChunk("f", 8, 4, 100);
  REQUIRE(last);
  CHECK(last->content == "89");
  CHECK(last->eof);
  CHECK(last->inode == first->inode);
  auto exact = files.ReadChunk("f", 6, 4, 100);
  REQUIRE(exact);
  CHECK(exact->content == "6789");
  CHECK(exact->eof);  // ends at the file's size: no extra empty round trip
  auto too_large = files.ReadChunk("f", 0, 4, 9);
  REQUIRE_FALSE(too_large);
  CHECK(too_large.error().code == ErrorCode::kArtifactTooLarge);
  // /proc files report size 0 and still read to their end.
  auto proc = files.ReadChunk("/proc/self/status", 0, 1 << 20, 1 << 20);
  REQUIRE(proc);
  CHECK(proc->content.find("VmRSS") != std::string::npos);
  CHECK(proc->eof);
}

TEST_CASE("a chunked write is invisible until committed and leaves nothing when dropped",
          "[unit]") {
  TempDir dir;
  FileOps files(dir.path(), dir.path());
  {
    auto write = files.BeginWrite("out.bin", true, 0640);
    REQUIRE(write);
    REQUIRE(write->Append("abc"));
    REQUIRE(write->Append("def"));
    CHECK(::access(dir.Join("out.bin").c_str(), F_OK) != 0);
    REQUIRE(write->Commit());
  }
  CHECK(*sandbox::ReadFile(dir.Join("out.bin")) == "abcdef");
  struct stat st {};
  REQUIRE(::stat(dir.Join("out.bin").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  {
    auto dropped = files.BeginWrite("out.bin", true, 0644);  // overwrite: a temp file
    REQUIRE(dropped);
    REQUIRE(dropped->Append("never"));
    auto exclusive = files.BeginWrite("new.bin", false, 0644);  // the name itself, O_EXCL
    REQUIRE(exclusive);
    REQUIRE(exclusive->Append("never"));
    auto clash = files.BeginWrite("new.bin", false, 0644);
    REQUIRE_FALSE(clash);
    CHECK(clash.error().code == ErrorCode::kFileExists);
  }
  CHECK(*sandbox::ReadFile(dir.Join("out.bin")) == "abcdef");
  auto listing = files.List("", false, 100);
  REQUIRE(listing);
  REQUIRE(listing->entries.size() == 1);
  CHECK(listing->entries[0].path == dir.Join("out.bin"));
}

}  // namespace file_ops_test
