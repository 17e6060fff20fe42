// The per-call memory peak window over plain files standing in for a cgroup's (the kernel's
// side, the reset itself, is exercised by the behaviour suite's usage test on real sessions).
#include "runtime/cgroup/memory_peak.h"

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace sandbox {
namespace {

TEST_CASE("memory peak: v1 resets max_usage_in_bytes and reads it again [unit]", "[unit]") {
  testing::TempDir group;
  std::string file = group.Join("memory.max_usage_in_bytes");
  REQUIRE(WriteFile(file, "987654321\n"));
  auto peak_file = OpenMemoryPeakFile(group.path(), /*v2=*/false);
  REQUIRE(peak_file);
  uint64_t before = 0;
  auto reader = StartMemoryPeakWindow(*peak_file, /*v2=*/false, &before);
  REQUIRE(reader);
  CHECK(before == 987654321u);
  CHECK(ReadFile(file)->front() == '0');  // the reset the kernel takes, written at offset 0
  REQUIRE(WriteFile(file, "4096\n"));     // what the kernel would say after the call
  CHECK((*reader)() == 4096u);
  // The same descriptor serves the next window: no open per call.
  auto next = StartMemoryPeakWindow(*peak_file, /*v2=*/false, &before);
  REQUIRE(next);
  CHECK(before == 4096u);
  REQUIRE(WriteFile(file, "garbage"));
  CHECK_FALSE((*next)().has_value());
}

TEST_CASE("memory peak: v2 writes reset through the kept descriptor [unit]", "[unit]") {
  testing::TempDir group;
  std::string file = group.Join("memory.peak");
  REQUIRE(WriteFile(file, "123456789\n"));
  auto peak_file = OpenMemoryPeakFile(group.path(), /*v2=*/true);
  REQUIRE(peak_file);
  auto reader = StartMemoryPeakWindow(*peak_file, /*v2=*/true);
  REQUIRE(reader);
  CHECK(ReadFile(file)->rfind("reset\n", 0) == 0);
  REQUIRE(WriteFile(file, "8192\n"));
  CHECK((*reader)() == 8192u);
}

TEST_CASE("memory peak: no group, or no peak file, is an error [unit]", "[unit]") {
  CHECK_FALSE(OpenMemoryPeakFile("", false));
  testing::TempDir group;
  CHECK_FALSE(OpenMemoryPeakFile(group.Join("missing"), false));
  CHECK_FALSE(OpenMemoryPeakFile(group.path(), /*v2=*/true));  // no memory.peak
  CHECK_FALSE(StartMemoryPeakWindow(nullptr, /*v2=*/true));
}

}  // namespace
}  // namespace sandbox
