// SandboxStarter over HostBackend: what a started sandbox is given (the default environment,
// the preload asked for or not), its agent ready for a call, a failed start named as one, and
// one live sandbox per session.
#include "runtime/session/sandbox_starter.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"

namespace sandbox::sandbox_starter_test {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST_CASE("sandbox starter: a cold start gets the default env and an agent that runs calls",
          "[unit]") {
  SessionConfig config;
  config.preload = "json";
  testing::HostBackend backend;
  SandboxStarter starter(config, backend, testing::HostImageResolver());
  auto image = starter.Resolve("host");
  REQUIRE(image);
  image->env = {"HOME=/home/user"};  // the image's own value wins

  auto started = starter.Start("sess-test", *image, config.limits, /*preload=*/false,
                               /*egress=*/false);
  REQUIRE(started);
  CHECK(started->session_id == "sess-test");
  CHECK(started->image == "host");
  CHECK_FALSE(started->preload_on_request);
  CHECK(started->egress == nullptr);
  const auto& env = backend.started().at(0)->spec.env;
  CHECK(Has(env, "HOME=/home/user"));
  CHECK_FALSE(Has(env, "HOME=/tmp"));
  CHECK(Has(env, "MPLBACKEND=Agg"));
  CHECK(Has(env, "LANG=C.UTF-8"));
  CHECK(std::none_of(env.begin(), env.end(),
                     [](const std::string& kv) { return kv.rfind("SANDBOX_PRELOAD", 0) == 0; }));

  RunRequest request;
  request.code = "print(6 * 7)";
  request.timeout_s = 20;
  auto result = started->agent->Run(request, {});
  REQUIRE(result);
  CHECK(result->stdout_text == "42\n");
}

TEST_CASE("sandbox starter: a cold start of the pool's kind waits for the word to preload",
          "[unit]") {
  SessionConfig config;
  config.preload = "json";
  testing::HostBackend backend;
  SandboxStarter starter(config, backend, testing::HostImageResolver());
  auto started = starter.Start("sess-cold", *starter.Resolve("host"), config.limits,
                               /*preload=*/true, /*egress=*/false);
  REQUIRE(started);
  CHECK(started->preload_on_request);
  CHECK(backend.started().at(0)->cpu_priority == CpuPriority::kNormal);
}

TEST_CASE("sandbox starter: a pooled start waits at background priority until warm", "[unit]") {
  SessionConfig config;
  config.preload = "json";
  testing::HostBackend backend;
  SandboxStarter starter(config, backend, testing::HostImageResolver());
  auto warm = starter.StartPooled(PoolKey{"host", config.limits, false});
  REQUIRE(warm);
  CHECK_FALSE(warm->preload_on_request);  // imported already, not on request
  CHECK(backend.started().at(0)->cpu_priority == CpuPriority::kBackground);
  CHECK(warm->agent->preload().failed.empty());
}

TEST_CASE("sandbox starter: a backend that fails to start is sandbox_unavailable", "[unit]") {
  SessionConfig config;
  testing::HostBackend backend;
  SandboxStarter starter(config, backend, testing::HostImageResolver());
  backend.FailNextStart(MakeError(ErrorCode::kInternal, "clone: EPERM"));
  auto failed = starter.Start("sess-fail", *starter.Resolve("host"), config.limits, false, false);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(failed.error().message.find("clone: EPERM") != std::string::npos);
}

TEST_CASE("sandbox starter: a session has one live sandbox, a killed one gives its id back",
          "[unit]") {
  SessionConfig config;
  testing::HostBackend backend;
  SandboxStarter starter(config, backend, testing::HostImageResolver());
  auto image = starter.Resolve("host");
  REQUIRE(image);
  auto first = starter.Start("sess-once", *image, config.limits, false, false);
  REQUIRE(first);
  // Refused above the backend: it never heard of the second.
  auto second = starter.Start("sess-once", *image, config.limits, false, false);
  REQUIRE_FALSE(second);
  CHECK(second.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(second.error().message.find("already has a live sandbox") != std::string::npos);
  CHECK(backend.started().size() == 1);
  CHECK(starter.Start("sess-other", *image, config.limits, false, false));

  // Killed (a save, a close), not yet gone: the starter lets a resume through, and the
  // backend's own check is the last guard (HostBackend refuses until the sandbox is destroyed,
  // as the namespace backend does; Docker removes its own killed container).
  REQUIRE(first->sandbox->Kill());
  auto guarded = starter.Start("sess-once", *image, config.limits, false, false);
  REQUIRE_FALSE(guarded);
  CHECK(guarded.error().message.find("already has a sandbox") != std::string::npos);
  first->sandbox.reset();
  CHECK(backend.started().at(0)->destroyed);
  auto again = starter.Start("sess-once", *image, config.limits, false, false);
  INFO((again ? std::string() : again.error().message));
  REQUIRE(again);
  // A sandbox that is destroyed without a kill gives its id back too.
  again->sandbox.reset();
  CHECK(starter.Start("sess-once", *image, config.limits, false, false));
}

TEST_CASE("sandbox starter: a pooled start cancelled by a stop fails at once and leaves nothing",
          "[unit]") {
  SessionConfig config;
  config.preload = "json";
  testing::HostBackend backend;
  SandboxStarter starter(config, backend, testing::HostImageResolver());
  StartCancel cancel;
  cancel.Cancel();  // the stop came while the backend made the sandbox
  auto began = std::chrono::steady_clock::now();
  auto warm = starter.StartPooled(PoolKey{"host", config.limits, false}, &cancel);
  REQUIRE_FALSE(warm);
  // Killed before its hello: not the 30 s the agent may take to say it.
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(10));
  CHECK(backend.started().at(0)->destroyed);
}

}  // namespace
}  // namespace sandbox::sandbox_starter_test
