#include "runtime/docker/api_version.h"

#include <catch2/catch.hpp>

namespace api_version_test {

using sandbox::docker::ApiVersion;
using sandbox::docker::NegotiateApiVersion;
using sandbox::docker::ParseApiVersion;

TEST_CASE("API versions parse and print", "[unit]") {
  auto v = ParseApiVersion("1.41");
  REQUIRE(v);
  CHECK(v->major == 1);
  CHECK(v->minor == 41);
  CHECK(v->ToString() == "1.41");
  CHECK(*ParseApiVersion("1.9") < *ParseApiVersion("1.10"));
  for (const char* bad : {"", "1", "1.", ".41", "1.41.2", "v1.41", "1.x", "1.-4"}) {
    INFO(bad);
    CHECK_FALSE(ParseApiVersion(bad));
  }
}

TEST_CASE("negotiation speaks min(ours, the daemon's) and never below 1.41", "[unit]") {
  // Docker 20.10: newest 1.41.
  CHECK(NegotiateApiVersion({1, 41}, ApiVersion{1, 12}).value() == ApiVersion{1, 41});
  // Docker 29: newest 1.52, oldest 1.44: we speak our newest.
  CHECK(NegotiateApiVersion({1, 52}, ApiVersion{1, 44}).value() ==
        sandbox::docker::kNewestApiVersion);
  CHECK(NegotiateApiVersion({1, 45}).value() == ApiVersion{1, 45});
  // Too old a daemon.
  auto old = NegotiateApiVersion({1, 40});
  REQUIRE_FALSE(old);
  CHECK(old.error().code == sandbox::ErrorCode::kSandboxUnavailable);
  CHECK_THAT(old.error().message, Catch::Contains("1.40") && Catch::Contains("1.41"));
  // A future daemon that no longer accepts anything we speak.
  auto future = NegotiateApiVersion({2, 3}, ApiVersion{2, 0});
  REQUIRE_FALSE(future);
  CHECK_THAT(future.error().message, Catch::Contains("2.0"));
}

}  // namespace api_version_test
