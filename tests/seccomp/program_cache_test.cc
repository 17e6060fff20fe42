// The compiled program kept between one-shot runs (seccomp/program_cache.h): read back only for
// its own key, from a file of the euid's that nobody else may write, whole; and the policy's
// program loaded from it instead of compiled. No fork, no privileges.
#include "seccomp/program_cache.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "seccomp/compile.h"
#include "seccomp/policy.h"
#include "seccomp/policy_spec.h"

namespace sandbox::seccomp::program_cache_test {
namespace {

class TempDir {
 public:
  TempDir() {
    char path[] = "/tmp/seccomp-program-cache-test.XXXXXX";
    REQUIRE(::mkdtemp(path) != nullptr);
    path_ = path;
  }
  ~TempDir() { (void)RemoveTree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

BpfProgram AllowAll() { return BpfProgram({BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)}); }

const BpfProgram& Compiled() {
  static const BpfProgram program = [] {
    Result<BpfProgram> compiled = CompilePolicy(SandboxPolicy());
    REQUIRE(compiled);
    return *compiled;
  }();
  return program;
}

bool Same(const BpfProgram& a, const BpfProgram& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const sock_filter& x = a.instructions()[i];
    const sock_filter& y = b.instructions()[i];
    if (x.code != y.code || x.jt != y.jt || x.jf != y.jf || x.k != y.k) return false;
  }
  return true;
}

TEST_CASE("the key names this binary and the libseccomp loaded", "[unit]") {
  const std::string key = ProgramCacheKey();
  CHECK(key.find("binary=") != std::string::npos);
  CHECK(key.find("binary=?") == std::string::npos);
  CHECK(key.find("libseccomp=2.") != std::string::npos);
  CHECK(key.find(" ?\n") == std::string::npos);  // the library's file was found
  CHECK(key == ProgramCacheKey());
  CHECK(ProgramCachePath("/state") ==
        "/state/probe-cache/seccomp-program." + std::to_string(::geteuid()));
}

TEST_CASE("a kept program reads back whole, for its own key only", "[unit]") {
  TempDir dir;
  const std::string path = ProgramCachePath(dir.path());
  const std::string key = ProgramCacheKey();
  CHECK_FALSE(LoadKeptProgram(path, key));  // nothing kept yet

  KeepProgram(path, key, Compiled());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::optional<BpfProgram> kept = LoadKeptProgram(path, key);
  REQUIRE(kept);
  CHECK(Same(*kept, Compiled()));
  CHECK(kept->prog()->filter == kept->instructions().data());

  SECTION("another binary or libseccomp: not used") {
    CHECK_FALSE(LoadKeptProgram(path, key + "x=1\n"));
    CHECK_FALSE(LoadKeptProgram(path, "mcp-sandbox seccomp program cache 1\nbinary=1:2:3:4.5\n"));
  }
  SECTION("a file others may write: not used") {
    REQUIRE(::chmod(path.c_str(), 0622) == 0);
    CHECK_FALSE(LoadKeptProgram(path, key));
  }
  SECTION("a cut or lengthened file: not used") {
    auto text = ReadFile(path);
    REQUIRE(text);
    REQUIRE(WriteFile(path, text->substr(0, text->size() - 1), 0600));
    CHECK_FALSE(LoadKeptProgram(path, key));
    REQUIRE(WriteFile(path, *text + std::string(sizeof(sock_filter), '\0'), 0600));
    CHECK_FALSE(LoadKeptProgram(path, key));
    REQUIRE(WriteFile(path, key + "program=0\n", 0600));
    CHECK_FALSE(LoadKeptProgram(path, key));
  }
  SECTION("a symlink: not followed") {
    const std::string link = path + ".link";
    REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
    CHECK_FALSE(LoadKeptProgram(link, key));
  }
  SECTION("forgotten") {
    ForgetKeptProgram(path);
    CHECK_FALSE(LoadKeptProgram(path, key));
  }
}

TEST_CASE("the policy's program is the kept one when there is one for its key", "[unit]") {
  TempDir dir;
  const std::string path = ProgramCachePath(dir.path());
  // A stand-in of one instruction, kept under the real key: the program read back is it.
  KeepProgram(path, ProgramCacheKey(), AllowAll());
  Result<BpfProgram> program = LoadOrCompileSandboxPolicy(path);
  REQUIRE(program);
  CHECK(Same(*program, AllowAll()));
}

TEST_CASE("the policy's program is compiled and kept when none is kept for its key", "[unit]") {
  TempDir dir;
  const std::string path = ProgramCachePath(dir.path());
  KeepProgram(path, ProgramCacheKey() + "stale=1\n", AllowAll());  // another binary's
  Result<BpfProgram> program = LoadOrCompileSandboxPolicy(path);
  REQUIRE(program);
  CHECK(Same(*program, Compiled()));
  std::optional<BpfProgram> kept = LoadKeptProgram(path, ProgramCacheKey());
  REQUIRE(kept);
  CHECK(Same(*kept, Compiled()));
  // No file asked for: compiled, nothing kept.
  Result<BpfProgram> plain = LoadOrCompileSandboxPolicy("");
  REQUIRE(plain);
  CHECK(Same(*plain, Compiled()));
}

}  // namespace
}  // namespace sandbox::seccomp::program_cache_test
