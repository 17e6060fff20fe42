// Helpers shared by the Catch2 suites.
#pragma once

#include <string>
#include <string_view>

namespace sandbox::testing {

// Ends this test process as "skipped" (exit 77, ctest SKIP_RETURN_CODE) after printing why.
// Each ctest test runs one TEST_CASE, so only this test is skipped.
[[noreturn]] void SkipTest(std::string_view reason);

// For tests that need the Docker daemon: skips like SkipTest, except where the runner has a
// daemon it prepared itself (tools/test sets SANDBOX_TEST_REQUIRE_DOCKER=1 once dockerd answers
// and the test image is loaded): there a Docker test that cannot run is a failure, so a missing
// set-up step cannot pass as a skip (as root; other users skip). Exits 1 after printing why.
[[noreturn]] void SkipDockerTest(std::string_view reason);

std::string SourceDir();  // the project's source tree
std::string BinaryDir();  // the build tree

// A fresh directory under $TMPDIR, removed (recursively) when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Runs `sh -c command`, returns its exit status (or -1), and its stdout in *output if given.
int RunShell(const std::string& command, std::string* output = nullptr);

}  // namespace sandbox::testing
