// SANDBOX_DOCKER_RUNTIME against what the daemon registered: the messages a user sees when the
// daemon lacks the runtime (a tool error on create, doctor's line). The real daemon's side runs in
// tests/gvisor/docker_runsc_test.sh.
#include "runtime/docker/daemon_runtime.h"

#include <catch2/catch.hpp>

namespace daemon_runtime_test {

using namespace sandbox;
using namespace sandbox::docker;

namespace {
DaemonInfo Info() {
  DaemonInfo info;
  info.runtimes = {{"runc", "runc"}, {"io.containerd.runc.v2", "runc"}};
  info.default_runtime = "runc";
  return info;
}
}  // namespace

TEST_CASE("a runtime the daemon registered is accepted, any other refused saying how", "[unit]") {
  DaemonInfo info = Info();
  CHECK(RequireRuntime(info, ""));
  CHECK(RequireRuntime(info, "runc"));
  auto missing = RequireRuntime(info, "runsc");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(missing.error().message, Catch::Contains("no runtime 'runsc'") &&
                                          Catch::Contains("it has: io.containerd") &&
                                          Catch::Contains("--add-runtime runsc=") &&
                                          Catch::Contains("SANDBOX_DOCKER_RUNTIME"));
  CHECK(DescribeRuntime(info, "") == "the daemon's default (runc)");
  info.runtimes["runsc"] = "/usr/bin/runsc";
  CHECK(RequireRuntime(info, "runsc"));
  CHECK(DescribeRuntime(info, "runsc") == "runsc (registered: /usr/bin/runsc)");
}

TEST_CASE("a create refused for an unknown runtime says what to do", "[unit]") {
  // Docker 20.10's answer (API 1.41), then a newer daemon's.
  for (const char* said : {"POST /containers/create answered 400: Unknown runtime specified runsc",
                           "answered 400: unknown or invalid runtime name: runsc"}) {
    Error explained =
        ExplainCreateError(MakeError(ErrorCode::kInvalidArgument, "{}", said), "runsc");
    CHECK(explained.code == ErrorCode::kSandboxUnavailable);
    CHECK_THAT(explained.message, Catch::Contains("no runtime 'runsc'") &&
                                      Catch::Contains("--add-runtime") && Catch::Contains(said));
  }
  // Any other failure, or no runtime named: the error as it was.
  Error other = MakeError(ErrorCode::kNotFound, "No such image: img");
  CHECK(ExplainCreateError(other, "runsc").message == other.message);
  Error unknown = MakeError(ErrorCode::kInvalidArgument, "Unknown runtime specified x");
  CHECK(ExplainCreateError(unknown, "").code == ErrorCode::kInvalidArgument);
}

}  // namespace daemon_runtime_test
