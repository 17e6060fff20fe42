// The session manager over HostBackend (sandbox-init on the host, no kernel features): sessions
// and their state, the cap, busy leases, TTL on an injected clock, cancellation, per-session
// limits, OOM attribution, and the failures a real backend meets rarely (a start that fails, an
// agent that dies). Seconds, without root, an image or a daemon.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox::session_manager_unit_test {
namespace {

using namespace std::chrono_literals;
using testing::ManualClock;

struct Fixture {
  explicit Fixture(int max_sessions = 4) {
    SessionConfig config;
    config.default_image = "host";
    config.max_sessions = max_sessions;
    config.exec_timeout_s = 30;
    config.ttl = std::chrono::minutes(30);
    config.max_code_bytes = 4096;
    config.max_output_bytes = 1000;
    config.clock = [this] { return clock.Now(); };
    backend = std::make_shared<testing::HostBackend>();
    manager = std::make_unique<SessionManager>(config, backend, testing::HostImageResolver());
  }
  std::string Create(SessionOptions options = {}) {
    auto info = manager->Create(options);
    REQUIRE(info);
    return info->id;
  }
  RunResult Python(const std::string& id, const std::string& code, double timeout_s = 20) {
    RunRequest request;
    request.code = code;
    request.timeout_s = timeout_s;
    auto result = manager->Run(id, request);
    REQUIRE(result);
    return *result;
  }
  // Waits until `path` exists under a sandbox's data dir: the state the test needs, not a sleep.
  static bool WaitForFile(const std::string& path, std::chrono::seconds timeout = 20s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    struct stat st {};
    while (::stat(path.c_str(), &st) != 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  ManualClock clock;
  std::shared_ptr<testing::HostBackend> backend;
  std::unique_ptr<SessionManager> manager;
};

TEST_CASE("session manager: state lives across runs, and closing destroys the sandbox", "[unit]") {
  Fixture f;
  SessionOptions named;
  named.name = "analysis";
  std::string id = f.Create(named);
  CHECK(f.Python(id, "x = 41").exit_code == 0);
  auto run = f.Python(id, "print(x + 1)");
  CHECK(run.stdout_text == "42\n");
  auto info = f.manager->Get(id);
  REQUIRE(info);
  CHECK(info->name == "analysis");
  CHECK(info->runs == 2);
  CHECK(info->state == "idle");
  CHECK(f.manager->List().size() == 1);
  REQUIRE(f.manager->Close(id));
  CHECK(f.backend->started().at(0)->destroyed);
  auto gone = f.manager->Get(id);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == ErrorCode::kSessionNotFound);
  CHECK(f.manager->Close(id).error().code == ErrorCode::kSessionNotFound);
  CHECK(f.manager->Get("nope").error().code == ErrorCode::kInvalidSessionId);
}

TEST_CASE("session manager: the cap counts open sessions, and a close makes room", "[unit]") {
  Fixture f(/*max_sessions=*/2);
  std::string a = f.Create();
  f.Create();
  auto third = f.manager->Create({});
  REQUIRE_FALSE(third);
  CHECK(third.error().code == ErrorCode::kMaxSessions);
  CHECK(f.backend->started().size() == 2);  // refused before a sandbox was started
  REQUIRE(f.manager->Close(a));
  CHECK(f.manager->Create({}));
}

TEST_CASE("session manager: a failed start is a clear error and frees its place", "[unit]") {
  Fixture f(/*max_sessions=*/1);
  f.backend->FailNextStart(MakeError(ErrorCode::kInternal, "clone: EPERM"));
  auto failed = f.manager->Create({});
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(failed.error().message.find("clone: EPERM") != std::string::npos);
  CHECK(f.manager->List().empty());
  CHECK(f.manager->Create({}));  // the cap of 1 was not used up by the failure
}

TEST_CASE("session manager: one call at a time per session (busy lease)", "[unit]") {
  Fixture f;
  std::string id = f.Create();
  std::string data = f.backend->started().at(0)->data_dir;
  auto long_run = std::async(std::launch::async, [&] {
    RunRequest request;
    request.timeout_s = 0;  // the server's default
    request.code = "import time\nopen('started', 'w').close()\ntime.sleep(60)";
    return f.manager->Run(id, request);
  });
  REQUIRE(Fixture::WaitForFile(data + "/started"));
  RunRequest other;
  other.timeout_s = 0;
  other.code = "print(1)";
  auto busy = f.manager->Run(id, other);
  REQUIRE_FALSE(busy);
  CHECK(busy.error().code == ErrorCode::kSessionBusy);
  CHECK(f.manager->ReadFile(id, "started", 10).error().code == ErrorCode::kSessionBusy);
  CHECK(f.manager->Get(id)->state == "busy");
  CHECK(f.manager->Close(id).error().code == ErrorCode::kSessionBusy);
  REQUIRE(f.manager->Close(id, /*force=*/true));  // kills the run
  auto ended = long_run.get();
  REQUIRE_FALSE(ended);
  CHECK(ended.error().code == ErrorCode::kSessionNotFound);
}

TEST_CASE("session manager: idle sessions expire on the TTL, busy ones never", "[unit]") {
  Fixture f;
  std::string idle = f.Create();
  std::string working = f.Create();
  std::string data = f.backend->started().at(1)->data_dir;
  f.clock.Advance(29min);
  CHECK(f.manager->ExpireIdle() == 0);
  CHECK(f.Python(idle, "pass").exit_code == 0);  // use restarts the idle time
  auto run = std::async(std::launch::async, [&] {
    RunRequest request;
    request.timeout_s = 0;  // the server's default
    request.code =
        "import os, time\nopen('started', 'w').close()\n"
        "while not os.path.exists('go'): time.sleep(0.01)";
    return f.manager->Run(working, request);
  });
  REQUIRE(Fixture::WaitForFile(data + "/started"));
  f.clock.Advance(31min);  // both idle past the TTL by the clock; one is busy
  CHECK(f.manager->ExpireIdle() == 1);
  CHECK(f.manager->Get(idle).error().code == ErrorCode::kSessionNotFound);
  REQUIRE(WriteFile(data + "/go", ""));
  REQUIRE(run.get());
  CHECK(f.manager->Get(working));  // its run just ended: idle time starts again
  CHECK(f.manager->ExpireIdle() == 0);
  f.clock.Advance(31min);
  CHECK(f.manager->ExpireIdle() == 1);
}

TEST_CASE("session manager: a cancelled run stops and the session goes on", "[unit]") {
  Fixture f;
  // The interrupt must stop the run, not the kill after the grace (which loses the state): the
  // worker gets the agent's default second and more, as a loaded host may need to schedule its
  // KeyboardInterrupt (200 ms failed once at load average 30).
  f.backend->SetGraceMs(10'000);
  std::string id = f.Create();
  std::string data = f.backend->started().at(0)->data_dir;
  f.Python(id, "kept = 'still here'");
  CancelToken token;
  auto run = std::async(std::launch::async, [&] {
    RunRequest request;
    request.timeout_s = 0;  // the server's default
    request.code = "import time\nopen('started', 'w').close()\ntime.sleep(60)";
    return f.manager->Run(id, request, {}, &token);
  });
  REQUIRE(Fixture::WaitForFile(data + "/started"));
  token.Cancel();
  auto result = run.get();
  REQUIRE(result);
  CHECK(result->cancelled);
  CHECK_FALSE(result->state_lost);  // interrupted, not killed
  CHECK(f.Python(id, "print(kept)").stdout_text == "still here\n");

  CancelToken early;
  early.Cancel();
  RunRequest request;
  request.timeout_s = 0;
  request.code = "print(1)";
  CHECK(f.manager->Run(id, request, {}, &early).error().code == ErrorCode::kCancelled);
}

TEST_CASE("session manager: per-session limits narrow the server's, never widen them", "[unit]") {
  Fixture f;
  const Limits& max = f.manager->config().limits;
  SessionOptions narrow;
  narrow.memory_bytes = max.memory_bytes / 2;
  narrow.cpus = 0.5;
  narrow.pids = 64;
  std::string id = f.Create(narrow);
  const SandboxSpec& spec = f.backend->started().at(0)->spec;
  CHECK(spec.limits.memory_bytes == max.memory_bytes / 2);
  CHECK(spec.limits.cpus == 0.5);
  CHECK(spec.limits.pids == 64);
  CHECK(f.manager->Get(id)->limits.memory_bytes == max.memory_bytes / 2);

  SessionOptions wide;
  wide.memory_bytes = max.memory_bytes * 2;
  auto refused = f.manager->Create(wide);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kInvalidArgument);
  CHECK(f.backend->started().size() == 1);
}

TEST_CASE("session manager: run bounds, and output cut to the budget", "[unit]") {
  Fixture f;
  std::string id = f.Create();
  RunRequest big;
  big.timeout_s = 0;
  big.code = std::string(5000, '#');
  auto too_big = f.manager->Run(id, big);
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == ErrorCode::kCodeTooLarge);
  CHECK(too_big.error().message.find("SANDBOX_MAX_CODE_BYTES") != std::string::npos);
  RunRequest slow;
  slow.code = "pass";
  slow.timeout_s = 31;
  CHECK(f.manager->Run(id, slow).error().code == ErrorCode::kInvalidArgument);
  auto chatty = f.Python(id, "print('x' * 5000)");
  CHECK(chatty.stdout_text.size() == 1000);
  CHECK(chatty.stdout_truncated);
  auto timed = f.Python(id, "import time\ntime.sleep(30)", /*timeout_s=*/0.5);
  CHECK(timed.timed_out);
}

TEST_CASE("session manager: a killed worker is OOM only when the memory limit killed it",
          "[unit]") {
  Fixture f;
  std::string id = f.Create();
  auto sandbox = f.backend->started().at(0);
  const std::string kill_self =
      "import os, signal, time\nopen('started', 'w').close()\n"
      "while not os.path.exists('go'): time.sleep(0.01)\n"
      "os.remove('started'); os.remove('go')\nos.kill(os.getpid(), signal.SIGKILL)";
  // The run goes on another thread without Catch2's assertions (they are not thread-safe:
  // ThreadSanitizer reports them); its result is checked here.
  auto run_kill_self = [&] {
    RunRequest request;
    request.code = kill_self;
    request.timeout_s = 20;
    return f.manager->Run(id, request);
  };
  // A worker killed by a signal the limit did not send: not oom.
  auto plain = std::async(std::launch::async, run_kill_self);
  REQUIRE(Fixture::WaitForFile(sandbox->data_dir + "/started"));
  REQUIRE(WriteFile(sandbox->data_dir + "/go", ""));
  auto plain_result = plain.get();
  REQUIRE(plain_result);
  CHECK(plain_result->worker_killed);
  CHECK_FALSE(plain_result->oom);
  // The same death while the sandbox's OOM counter moves: oom.
  auto oom = std::async(std::launch::async, run_kill_self);
  REQUIRE(Fixture::WaitForFile(sandbox->data_dir + "/started"));
  sandbox->oom_kills = 1;
  REQUIRE(WriteFile(sandbox->data_dir + "/go", ""));
  auto oom_result = oom.get();
  REQUIRE(oom_result);
  CHECK(oom_result->worker_killed);
  CHECK(oom_result->oom);
  CHECK(f.Python(id, "print('alive')").stdout_text == "alive\n");  // a new worker serves
}

TEST_CASE(
    "session manager: an agent that dies gives a clear error, never a hang, and its "
    "session is closed",
    "[unit]") {
  Fixture f;
  std::string id = f.Create();
  f.backend->started().at(0)->KillAgent();
  RunRequest request;
  request.code = "print(1)";
  request.timeout_s = 5;
  auto start = std::chrono::steady_clock::now();
  auto run = f.manager->Run(id, request);
  REQUIRE_FALSE(run);
  CHECK(run.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(run.error().message.find(id) != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  // Not left listed as idle and failing every call: the caller is told to start anew.
  CHECK(run.error().message.find("the session is closed") != std::string::npos);
  CHECK(f.manager->List().empty());
  auto again = f.manager->Run(id, request);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == ErrorCode::kSessionNotFound);
}

}  // namespace
}  // namespace sandbox::session_manager_unit_test
