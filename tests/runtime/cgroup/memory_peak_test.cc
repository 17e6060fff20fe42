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
  auto reader = StartMemoryPeakWindow(group.path(), /*v2=*/false);
  REQUIRE(reader);
  CHECK(*ReadFile(file) == "0");       // the reset the kernel takes
  REQUIRE(WriteFile(file, "4096\n"));  // what the kernel would say after the call
  CHECK((*reader)() == 4096u);
  REQUIRE(WriteFile(file, "garbage"));
  CHECK_FALSE((*reader)().has_value());
}

TEST_CASE("memory peak: no group, or no peak file, is an error [unit]", "[unit]") {
  CHECK_FALSE(StartMemoryPeakWindow("", false));
  testing::TempDir group;
  CHECK_FALSE(StartMemoryPeakWindow(group.Join("missing"), false));
  CHECK_FALSE(StartMemoryPeakWindow(group.path(), /*v2=*/true));  // no memory.peak
}

}  // namespace
}  // namespace sandbox
