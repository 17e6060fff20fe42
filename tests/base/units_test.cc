#include "runtime/base/units.h"

#include <catch2/catch.hpp>

namespace units_test {

TEST_CASE("sizes parse with binary suffixes", "[unit]") {
  CHECK(*sandbox::ParseBytes("4096") == 4096);
  CHECK(*sandbox::ParseBytes("512m") == 512ull << 20);
  CHECK(*sandbox::ParseBytes("512M") == 512ull << 20);
  CHECK(*sandbox::ParseBytes("512MiB") == 512ull << 20);
  CHECK(*sandbox::ParseBytes("1g") == 1ull << 30);
  CHECK(*sandbox::ParseBytes("100k") == 100ull << 10);
  CHECK(*sandbox::ParseBytes("17b") == 17);
}

TEST_CASE("bad sizes are refused with the text in the message", "[unit]") {
  for (const char* bad :
       {"", "m", "-1", "1x", "1mm", "1.5g", "99999999999999999999", "20000000000t"}) {
    auto parsed = sandbox::ParseBytes(bad);
    INFO(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == sandbox::ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("sizes format for people", "[unit]") {
  CHECK(sandbox::FormatBytes(512ull << 20) == "512MiB");
  CHECK(sandbox::FormatBytes(1536ull << 20) == "1.5GiB");
  CHECK(sandbox::FormatBytes(17) == "17B");
}

}  // namespace units_test
