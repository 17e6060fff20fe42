#include "runtime/gvisor/runsc.h"

#include <catch2/catch.hpp>

#include "runtime/gvisor/gvisor_backend.h"

namespace runsc_test {

using namespace sandbox::gvisor;

TEST_CASE("runsc's release date is read from Debian's and upstream's version lines", "[unit]") {
  CHECK(ParseReleaseDate("runsc version 0.0~20221219.0") == 20221219);
  CHECK(ParseReleaseDate("runsc version release-20230227.0") == 20230227);
  CHECK(ParseReleaseDate("runsc version VERSION_MISSING") == 0);
}

TEST_CASE("platforms: systrap needs release 20230227, unknown ones are named", "[unit]") {
  CHECK(PlatformProblem("ptrace", 20221219).empty());
  CHECK(PlatformProblem("systrap", 20221219).find("predates the systrap platform") !=
        std::string::npos);
  CHECK(PlatformProblem("systrap", 20230621).empty());
  CHECK(PlatformProblem("systrap", 0).empty());  // an unknown version is given the benefit
  CHECK(PlatformProblem("vm", 20230621).find("not one of") != std::string::npos);
}

TEST_CASE("a missing runsc is named with how to install it", "[unit]") {
  auto missing = FindRunsc("runsc-that-does-not-exist");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("apt-get install runsc") != std::string::npos);
  RunscCheck check = CheckRunsc("/nonexistent/runsc", "ptrace");
  CHECK_FALSE(check.ok);
  CHECK(check.detail.find("/nonexistent/runsc") != std::string::npos);
}

TEST_CASE("the host pids cap leaves the Sentry room for its threads", "[unit]") {
  CHECK(HostPidsFor(16) == 4096);
  CHECK(HostPidsFor(1000) == 32000);
}

}  // namespace runsc_test
