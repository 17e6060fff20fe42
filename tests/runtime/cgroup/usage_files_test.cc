// The kept usage files over plain files standing in for a cgroup's: the figures follow what the
// files say after they were opened (pread from the start, no reopen), and nothing is read once
// closed. The kernel's side is exercised by the behaviour suite's usage test on real sessions.
#include "runtime/cgroup/usage_files.h"

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace sandbox::usage_files_test {
namespace {

TEST_CASE("usage files: v1 CPU, OOM kills and peak through kept descriptors [unit]", "[unit]") {
  testing::TempDir memory;
  testing::TempDir cpuacct;
  REQUIRE(WriteFile(cpuacct.Join("cpuacct.usage"), "1500000000\n"));
  REQUIRE(WriteFile(memory.Join("memory.oom_control"),
                    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"));
  REQUIRE(WriteFile(memory.Join("memory.max_usage_in_bytes"), "1048576\n"));
  auto files = CgroupUsageFiles::Open(/*v2=*/false, memory.path(), cpuacct.path());
  CHECK(files.open_files() == 3);
  CHECK(files.CpuSeconds() == Approx(1.5));
  CHECK(files.OomKills() == 2u);
  // New contents are seen through the same descriptors (the kernel regenerates the text).
  REQUIRE(WriteFile(cpuacct.Join("cpuacct.usage"), "2500000000\n"));
  REQUIRE(WriteFile(memory.Join("memory.oom_control"), "oom_kill_disable 0\noom_kill 3\n"));
  CHECK(files.CpuSeconds() == Approx(2.5));
  CHECK(files.OomKills() == 3u);
  auto reader = files.StartMemoryPeakWindow();
  REQUIRE(reader);
  CHECK(files.PeakBeforeResets() == 1048576u);
  files.Close();
  CHECK(files.open_files() == 0);
  CHECK(files.CpuSeconds() == 0);
  CHECK(files.OomKills() == 0u);
  CHECK_FALSE(files.StartMemoryPeakWindow());
  // The reader of a window still running keeps its descriptor.
  REQUIRE(WriteFile(memory.Join("memory.max_usage_in_bytes"), "4096\n"));
  CHECK((*reader)() == 4096u);
}

TEST_CASE("usage files: v2 cpu.stat and memory.events [unit]", "[unit]") {
  testing::TempDir group;
  REQUIRE(WriteFile(group.Join("cpu.stat"), "usage_usec 2000000\nuser_usec 1500000\n"));
  REQUIRE(WriteFile(group.Join("memory.events"), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"));
  auto files = CgroupUsageFiles::Open(/*v2=*/true, group.path(), group.path());
  CHECK(files.open_files() == 2);  // no memory.peak here: no per-call peak
  CHECK(files.CpuSeconds() == Approx(2.0));
  CHECK(files.OomKills() == 1u);
  CHECK_FALSE(files.StartMemoryPeakWindow());
}

TEST_CASE("usage files: missing groups read as zero [unit]", "[unit]") {
  auto none = CgroupUsageFiles::Open(/*v2=*/false, "", "");
  CHECK(none.open_files() == 0);
  CHECK(none.CpuSeconds() == 0);
  CHECK(none.OomKills() == 0u);
  CgroupUsageFiles empty;
  CHECK(empty.CpuSeconds() == 0);
}

}  // namespace
}  // namespace sandbox::usage_files_test
