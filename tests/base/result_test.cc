#include "runtime/base/result.h"

#include <fcntl.h>

#include <catch2/catch.hpp>

namespace result_test {

using sandbox::ErrorCode;

namespace {
sandbox::Result<int> OpenMissing() {
  if (::open("/nonexistent/for-sure", O_RDONLY | O_CLOEXEC) < 0) {
    return sandbox::FailSys("open", "/nonexistent/for-sure");
  }
  return 1;
}
sandbox::Result<int> Outer() {
  SBX_ASSIGN_OR_RETURN(int value, OpenMissing());
  return value + 1;
}
}  // namespace

TEST_CASE("a system error names the call, its argument and the errno", "[unit]") {
  auto result = OpenMissing();
  REQUIRE_FALSE(result);
  CHECK(result.error().sys_errno == ENOENT);
  CHECK(result.error().code == ErrorCode::kNotFound);
  CHECK(result.error().message.rfind("open(/nonexistent/for-sure): ENOENT", 0) == 0);
}

TEST_CASE("errors propagate with context added on the way up", "[unit]") {
  auto result = Outer();
  REQUIRE_FALSE(result);
  auto wrapped = std::move(result.error()).Context("load image");
  CHECK(wrapped.message.rfind("load image: open(", 0) == 0);
}

TEST_CASE("error codes keep their DESIGN.md spelling", "[unit]") {
  CHECK(sandbox::ErrorCodeName(ErrorCode::kSessionBusy) == "session_busy");
  CHECK(sandbox::ErrorCodeName(ErrorCode::kSandboxUnavailable) == "sandbox_unavailable");
  CHECK(sandbox::ErrorCodeName(ErrorCode::kOom) == "oom");
}

}  // namespace result_test
