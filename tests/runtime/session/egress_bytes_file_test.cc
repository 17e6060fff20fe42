// The egress byte count a server publishes for the CLI: what the proxy adds is what a reader in
// another open file description sees; the file goes with the session; a file no server holds
// locked (a crashed server's: the kernel drops a dead process's flock) is not read and is swept.
#include "runtime/session/egress_bytes_file.h"

#include <unistd.h>

#include <atomic>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace sandbox::egress_bytes_file_test {
namespace {

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TEST_CASE("egress bytes file: published, read, removed with the session [unit]", "[unit]") {
  testing::TempDir dir;
  const std::string egress = dir.Join("egress");
  {
    auto published = EgressBytesFile::Create(egress, "sess_abc");
    REQUIRE(published);
    CHECK(ReadEgressBytes(egress, "sess_abc") == 0u);
    std::atomic_ref<uint64_t>(*(*published)->counter()).fetch_add(3 << 20);
    CHECK(ReadEgressBytes(egress, "sess_abc") == uint64_t{3} << 20);
    CHECK_FALSE(ReadEgressBytes(egress, "sess_other").has_value());
    CHECK(SweepEgressBytesFiles(egress) == 0);  // held: a live server's
    CHECK(Exists(egress + "/sess_abc.bytes"));
  }
  CHECK_FALSE(Exists(egress + "/sess_abc.bytes"));
  CHECK_FALSE(ReadEgressBytes(egress, "sess_abc").has_value());
}

TEST_CASE("egress bytes file: a count nobody holds is not read and is swept [unit]", "[unit]") {
  testing::TempDir dir;
  // What a crashed server leaves: the file, without the lock that went with the process.
  REQUIRE(WriteFile(dir.Join("sess_dead.bytes"), std::string(8, '\x07')));
  REQUIRE(WriteFile(dir.Join("unrelated.bytes"), std::string(8, '\0')));
  CHECK_FALSE(ReadEgressBytes(dir.path(), "sess_dead").has_value());
  auto live = EgressBytesFile::Create(dir.path(), "sess_live");
  REQUIRE(live);
  CHECK(SweepEgressBytesFiles(dir.path()) == 1);
  CHECK_FALSE(Exists(dir.Join("sess_dead.bytes")));
  CHECK(Exists(dir.Join("unrelated.bytes")));  // not a session's: left alone
  CHECK(ReadEgressBytes(dir.path(), "sess_live") == 0u);
}

TEST_CASE("egress bytes file: session ids that name no file are refused [unit]", "[unit]") {
  testing::TempDir dir;
  CHECK_FALSE(EgressBytesFile::Create(dir.path(), ""));
  CHECK_FALSE(EgressBytesFile::Create(dir.path(), "../escape"));
  CHECK_FALSE(ReadEgressBytes(dir.path(), "..").has_value());
}

}  // namespace
}  // namespace sandbox::egress_bytes_file_test
