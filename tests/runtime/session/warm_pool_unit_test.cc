// The warm pool and the preload over HostBackend (sandbox-init on the host): what the pool hands
// out, at which CPU priority, what starts cold instead, and what a dead or failed start costs.
// The root-only shell test (tests/cli/pool_test.sh) keeps what needs real sandboxes: cgroups,
// the kernel's view of priorities, records swept after a crash, Docker.
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox::warm_pool_unit_test {
namespace {

using namespace std::chrono_literals;

struct PoolFixture {
  explicit PoolFixture(int pool_size, std::string preload = "") {
    SessionConfig config;
    config.default_image = "host";
    config.max_sessions = 6;
    config.exec_timeout_s = 30;
    config.pool_size = pool_size;
    config.preload = std::move(preload);
    backend = std::make_shared<testing::HostBackend>();
    manager = std::make_unique<SessionManager>(config, backend, testing::HostImageResolver());
  }
  // Waits until the pool has `ready` sandboxes waiting: the state the test needs, not a sleep.
  PoolStats WaitReady(int ready, std::chrono::seconds timeout = 30s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      PoolStats stats = manager->PoolStatus().value();
      if (stats.ready >= ready || std::chrono::steady_clock::now() > deadline) return stats;
      std::this_thread::sleep_for(10ms);
    }
  }
  std::shared_ptr<testing::HostSandboxControl> Started(const std::string& session_id) {
    for (const auto& control : backend->started()) {
      if (control->spec.session_id == session_id) return control;
    }
    return nullptr;
  }
  std::string Python(const std::string& id, const std::string& code, bool fresh = false) {
    RunRequest request;
    request.code = code;
    request.fresh = fresh;
    request.timeout_s = 20;
    auto result = manager->Run(id, request);
    REQUIRE(result);
    return result->stdout_text;
  }

  std::shared_ptr<testing::HostBackend> backend;
  std::unique_ptr<SessionManager> manager;
};

TEST_CASE("warm pool: fills to its size at background priority, and a create claims one",
          "[unit]") {
  PoolFixture f(2);
  PoolStats stats = f.WaitReady(2);
  REQUIRE(stats.ready == 2);
  CHECK(stats.size == 2);
  auto pooled = f.backend->started();
  REQUIRE(pooled.size() == 2);
  for (const auto& control : pooled) {
    CHECK(control->spec.cpu_priority == CpuPriority::kBackground);
    CHECK(control->cpu_priority == CpuPriority::kBackground);
  }

  auto info = f.manager->Create({});
  REQUIRE(info);
  auto claimed = f.Started(info->id);
  REQUIRE(claimed != nullptr);
  CHECK(claimed->spec.cpu_priority == CpuPriority::kBackground);  // started for the pool
  CHECK(claimed->cpu_priority == CpuPriority::kNormal);           // raised when claimed
  CHECK(f.manager->PoolStatus()->claimed == 1);
  CHECK(f.manager->SessionCount() == 1);
  CHECK(f.Python(info->id, "x = 41\nprint(x + 1)") == "42\n");
  // The pool starts a replacement; the session is not counted among its sandboxes.
  CHECK(f.WaitReady(2).ready == 2);
  CHECK(f.backend->started().size() == 3);
}

TEST_CASE("warm pool: a session asking for other limits starts cold with exactly them", "[unit]") {
  PoolFixture f(1);
  REQUIRE(f.WaitReady(1).ready == 1);
  SessionOptions options;
  options.memory_bytes = 64ull << 20;
  auto info = f.manager->Create(options);
  REQUIRE(info);
  auto cold = f.Started(info->id);
  REQUIRE(cold != nullptr);
  CHECK(cold->spec.limits.memory_bytes == 64ull << 20);
  CHECK(cold->spec.cpu_priority == CpuPriority::kNormal);
  PoolStats stats = f.manager->PoolStatus().value();
  CHECK(stats.claimed == 0);
  CHECK(stats.ready == 1);  // the pooled one still waits for a session of its kind
}

TEST_CASE("warm pool: a pooled sandbox that died is never handed out, and is replaced", "[unit]") {
  PoolFixture f(1);
  REQUIRE(f.WaitReady(1).ready == 1);
  auto dead = f.backend->started().at(0);
  dead->KillAgent();
  auto info = f.manager->Create({});
  REQUIRE(info);
  CHECK(info->id != dead->spec.session_id);
  CHECK(f.Python(info->id, "print('served')") == "served\n");
  CHECK(dead->destroyed);  // dropped, not left running
  PoolStats stats = f.WaitReady(1);
  CHECK(stats.ready == 1);
  CHECK(stats.replaced >= 1);
}

TEST_CASE("warm pool: a failed start is counted with its error, and the pool tries again",
          "[unit]") {
  PoolFixture f(0);  // no pool yet: arm the failure before the pool's first start
  f.backend->FailNextStart(MakeError(ErrorCode::kInternal, "injected: the image is gone"));
  // The same backend under a manager with a pool: its first start fails, the next succeeds.
  SessionConfig config = f.manager->config();
  config.pool_size = 1;
  f.manager.reset();
  f.manager = std::make_unique<SessionManager>(config, f.backend, testing::HostImageResolver());
  PoolStats stats = f.WaitReady(1, 60s);
  CHECK(stats.ready == 1);
  CHECK(stats.failed == 1);
  CHECK(stats.last_error.empty());  // the error of the last start only, and that one worked
}

TEST_CASE("warm pool: pooled workers have the preload, cold ones of the kind get it later",
          "[unit]") {
  PoolFixture f(1, "json,textwrap");
  REQUIRE(f.WaitReady(1).ready == 1);
  const std::string check = "import sys\nprint('json' in sys.modules, 'textwrap' in sys.modules)";
  auto pooled = f.manager->Create({});
  REQUIRE(pooled);
  CHECK(f.Python(pooled->id, check) == "True True\n");
  // Fresh workers come from the zygote: the preload again, and each its own random state.
  const std::string draw = "import random, sys\nprint('json' in sys.modules, random.random())";
  std::set<std::string> draws;
  for (int i = 0; i < 3; ++i) draws.insert(f.Python(pooled->id, draw, /*fresh=*/true));
  CHECK(draws.size() == 3);
  for (const auto& d : draws) CHECK(d.starts_with("True "));

  // None ready (the pool is refilling, or is claimed now): a cold session of the pool's kind.
  f.manager->PoolStatus();
  std::optional<SessionInfo> cold;
  for (int i = 0; i < 3 && !cold; ++i) {
    auto info = f.manager->Create({});
    REQUIRE(info);
    if (f.Started(info->id)->spec.cpu_priority == CpuPriority::kNormal) cold = *info;
  }
  REQUIRE(cold);
  auto control = f.Started(cold->id);
  // Its first cell runs at once, without waiting for the preload, at normal priority: the
  // zygote is not due yet, so nothing imports and the call costs no priority writes.
  CHECK(f.Python(cold->id, check) == "False False\n");
  CHECK(control->cpu_priority == CpuPriority::kNormal);
  // Its zygote waits for a quiet moment: not while another session's call runs (issue #28).
  RunRequest sleep;
  sleep.code = "import time; time.sleep(1.5)";
  sleep.timeout_s = 20;
  bool slept = false;  // Catch2's assertions stay on this thread
  std::thread busy([&] { slept = static_cast<bool>(f.manager->Run(pooled->id, sleep)); });
  std::this_thread::sleep_for(1s);
  CHECK(control->cpu_priority == CpuPriority::kNormal);
  busy.join();
  CHECK(slept);
  // From the zygote's turn (the quiet moment after that call) until the preload is in place,
  // the session waits at background priority, with no call to lower it.
  auto due_by = std::chrono::steady_clock::now() + 10s;
  while (control->cpu_priority != CpuPriority::kBackground &&
         std::chrono::steady_clock::now() < due_by) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(control->cpu_priority == CpuPriority::kBackground);
  // Its zygote imports the preload a moment later; its fresh workers then have it.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string seen;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = f.Python(cold->id, check, /*fresh=*/true);
    if (seen == "True True\n") break;
    std::this_thread::sleep_for(100ms);
  }
  CHECK(seen == "True True\n");
  CHECK(control->cpu_priority == CpuPriority::kNormal);  // for good, once the preload is in
}

TEST_CASE("warm pool: destroying the manager destroys every pooled sandbox", "[unit]") {
  PoolFixture f(2);
  REQUIRE(f.WaitReady(2).ready == 2);
  auto info = f.manager->Create({});
  REQUIRE(info);
  f.manager.reset();
  for (const auto& control : f.backend->started()) CHECK(control->destroyed);
}

}  // namespace
}  // namespace sandbox::warm_pool_unit_test
