#include "runtime/base/files.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "tests/support/test_support.h"

namespace files_test {

using sandbox::testing::TempDir;

TEST_CASE("WriteFileAtomic replaces content and leaves no temp file", "[unit]") {
  TempDir dir;
  auto path = dir.Join("f.json");
  REQUIRE(sandbox::WriteFileAtomic(path, "one"));
  REQUIRE(sandbox::WriteFileAtomic(path, "two"));
  auto read = sandbox::ReadFile(path);
  REQUIRE(read);
  CHECK(*read == "two");
  std::string listing;
  sandbox::testing::RunShell("ls -A " + dir.path(), &listing);
  CHECK(listing == "f.json\n");
}

TEST_CASE("RemoveTree removes read-only directories and does not follow symlinks", "[unit]") {
  TempDir outside;
  REQUIRE(sandbox::WriteFile(outside.Join("keep"), "x"));
  TempDir dir;
  auto tree = dir.Join("tree");
  REQUIRE(sandbox::MakeDirs(tree + "/a/b"));
  REQUIRE(sandbox::WriteFile(tree + "/a/b/file", "x"));
  REQUIRE(::symlink(outside.path().c_str(), (tree + "/a/link").c_str()) == 0);
  REQUIRE(::chmod((tree + "/a/b").c_str(), 0555) == 0);
  REQUIRE(::chmod((tree + "/a").c_str(), 0555) == 0);
  REQUIRE(sandbox::RemoveTree(tree));
  struct stat st {};
  CHECK(::lstat(tree.c_str(), &st) != 0);
  CHECK(::lstat(outside.Join("keep").c_str(), &st) == 0);
}

}  // namespace files_test
