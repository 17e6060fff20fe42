// PreloadZygote, init's schedule for the preload zygote, driven directly: when the zygote
// starts (at the hello, or only once the host asks), that a run stops it and the end of the run
// lets it go on kResumeDelay later (the kernel's process state says so), and that `warm`
// requests are answered once, when the preload is there or will never be. The zygote here is a
// small Python program that says "ready" on its socket when the test lets it.
#include "runtime/agent/init/preload_zygote.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace preload_zygote_test {

using sandbox::agent::ChildSpec;
using sandbox::agent::PreloadZygote;
using sandbox::agent::WarmAnswer;
using sandbox::testing::TempDir;

namespace {

using Clock = PreloadZygote::Clock;

// Says ready on its socket (fd 3) once the file `go` exists, then waits to be killed.
constexpr const char* kFakeZygote = R"(
import os, socket, sys, time
go = os.path.join(os.getcwd(), "go")
while not os.path.exists(go):
    time.sleep(0.005)
socket.socket(fileno=3).send(b'{"type": "ready", "imported": ["json"], "failed": ["nope: no module"]}')
time.sleep(600)
)";

struct Fixture {
  explicit Fixture(bool on_request, std::string modules = "json")
      : preload(
            Spec(), std::move(modules), on_request,
            [this](uint64_t id, const WarmAnswer& answer) { answers.emplace_back(id, answer); }) {}

  ChildSpec Spec() const {
    ChildSpec spec;
    spec.executable = "/usr/bin/python3";
    spec.argv = {"python3", "-c", kFakeZygote};
    spec.cwd = dir.path();
    return spec;
  }

  // The zygote still running is killed when `preload` goes, then reaped.
  ~Fixture() {
    if (preload.pid() > 0) reaper.pids.push_back(preload.pid());
  }

  // Lets the fake zygote say ready, and waits until its socket is readable.
  void LetItBeReady() {
    std::ofstream(dir.Join("go")).put('\n');
    struct pollfd p {
      preload.pending_fd(), POLLIN, 0
    };
    REQUIRE(::poll(&p, 1, 10000) == 1);
  }

  // Destroyed after `preload`, whose end kills the zygote: reaps it, as init would.
  struct Reaper {
    ~Reaper() {
      for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
    }
    std::vector<pid_t> pids;
  };

  TempDir dir;
  Reaper reaper;
  std::vector<std::pair<uint64_t, WarmAnswer>> answers;
  PreloadZygote preload;
};

// The state letter of /proc/PID/stat: 'T' when stopped.
char ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  REQUIRE(close != std::string::npos);
  return all.at(close + 2);
}

// Whether the process's group-stop state reaches `stopped` within 2 s: a signal is delivered
// when the process next runs, after kill() has returned.
bool Becomes(pid_t pid, bool stopped) {
  for (int i = 0; i < 400; ++i) {
    if ((ProcessState(pid) == 'T') == stopped) return true;
    ::usleep(5000);
  }
  return false;
}

}  // namespace

TEST_CASE("preload zygote: with no modules the worker is warm at the hello [unit]", "[unit]") {
  Fixture f(/*on_request=*/false, "");
  CHECK_FALSE(f.preload.enabled());
  f.preload.OnHello();
  CHECK(f.preload.warm());
  CHECK(f.preload.pending_fd() == -1);
  f.preload.OnWarmRequest(7, /*hello_sent=*/true);
  REQUIRE(f.answers.size() == 1);
  CHECK(f.answers[0].first == 7);
  CHECK(f.answers[0].second.imported.empty());
}

TEST_CASE("preload zygote: starts at the hello, and a warm request waits for it [unit]", "[unit]") {
  Fixture f(/*on_request=*/false);
  CHECK(f.preload.pending_fd() == -1);
  f.preload.OnHello();
  REQUIRE(f.preload.pending_fd() >= 0);
  f.preload.OnWarmRequest(3, /*hello_sent=*/true);
  CHECK(f.answers.empty());
  CHECK(f.preload.ready() == nullptr);

  f.LetItBeReady();
  REQUIRE(f.preload.OnReadable());
  REQUIRE(f.preload.ready() != nullptr);
  CHECK(f.answers.empty());  // warm only once the persistent worker has the preload
  f.preload.MarkWarm();
  REQUIRE(f.answers.size() == 1);
  CHECK(f.answers[0].first == 3);
  CHECK(f.answers[0].second.imported == std::vector<std::string>{"json"});
  CHECK(f.answers[0].second.failed == std::vector<std::string>{"nope: no module"});
  f.preload.MarkWarm();
  CHECK(f.answers.size() == 1);  // each request is answered once
}

TEST_CASE("preload zygote: a cold session's zygote waits for the host's request [unit]", "[unit]") {
  SECTION("requested after the hello: due at once, started by the timer") {
    Fixture f(/*on_request=*/true);
    f.preload.OnHello();
    CHECK(f.preload.pending_fd() == -1);
    CHECK_FALSE(f.preload.NextTimer());
    f.preload.OnPreloadRequest(/*hello_sent=*/true);
    auto due = f.preload.NextTimer();
    REQUIRE(due);
    CHECK(*due <= Clock::now());
    f.preload.CheckTimers(Clock::now());
    CHECK(f.preload.pending_fd() >= 0);
    CHECK_FALSE(f.preload.NextTimer());
  }
  SECTION("requested before the hello: started by the hello") {
    Fixture f(/*on_request=*/true);
    f.preload.OnPreloadRequest(/*hello_sent=*/false);
    CHECK_FALSE(f.preload.NextTimer());
    f.preload.OnHello();
    CHECK(f.preload.pending_fd() >= 0);
  }
  SECTION("a warm request asks for it too") {
    Fixture f(/*on_request=*/true);
    f.preload.OnHello();
    f.preload.OnWarmRequest(9, /*hello_sent=*/true);
    REQUIRE(f.preload.NextTimer());
    f.preload.CheckTimers(Clock::now());
    CHECK(f.preload.pending_fd() >= 0);
    CHECK(f.answers.empty());
  }
}

TEST_CASE("preload zygote: a run stops the imports until kResumeDelay after it [unit]", "[unit]") {
  Fixture f(/*on_request=*/false);
  f.preload.OnHello();
  pid_t pid = f.preload.pid();
  REQUIRE(pid > 0);
  CHECK(Becomes(pid, /*stopped=*/false));

  f.preload.OnRunStarted();
  CHECK(Becomes(pid, /*stopped=*/true));
  CHECK_FALSE(f.preload.NextTimer());

  auto ended = Clock::now();
  f.preload.OnRunEnded(ended);
  REQUIRE(f.preload.NextTimer() == ended + PreloadZygote::kResumeDelay);
  f.preload.CheckTimers(ended + PreloadZygote::kResumeDelay - std::chrono::milliseconds(1));
  CHECK(f.preload.NextTimer());  // not yet: still due
  CHECK(Becomes(pid, /*stopped=*/true));

  SECTION("a run that starts before the delay keeps it stopped") {
    f.preload.OnRunStarted();
    CHECK_FALSE(f.preload.NextTimer());
    CHECK(Becomes(pid, /*stopped=*/true));
  }
  SECTION("after the delay it goes on") {
    f.preload.CheckTimers(ended + PreloadZygote::kResumeDelay);
    CHECK(Becomes(pid, /*stopped=*/false));
    CHECK_FALSE(f.preload.NextTimer());
  }
}

TEST_CASE("preload zygote: a start that falls due during a run waits for its end [unit]",
          "[unit]") {
  Fixture f(/*on_request=*/true);
  f.preload.OnHello();
  f.preload.OnPreloadRequest(/*hello_sent=*/true);
  f.preload.OnRunStarted();  // nothing to stop yet: no zygote
  auto ended = Clock::now() + std::chrono::milliseconds(5);
  f.preload.OnRunEnded(ended);
  CHECK(f.preload.NextTimer() == ended + PreloadZygote::kResumeDelay);
  CHECK(f.preload.pending_fd() == -1);
}

TEST_CASE("preload zygote: a zygote that dies is dropped, and its waiters are answered [unit]",
          "[unit]") {
  Fixture f(/*on_request=*/false);
  f.preload.OnHello();
  f.preload.OnWarmRequest(4, /*hello_sent=*/true);
  pid_t pid = f.preload.pid();
  REQUIRE(pid > 0);
  f.preload.OnRunStarted();  // stopped: a drop must still end it

  CHECK_FALSE(f.preload.OnExited(pid + 100000, 0));  // not the zygote
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(f.preload.OnExited(pid, status));
  CHECK(f.preload.warm());
  CHECK(f.preload.pending_fd() == -1);
  CHECK(f.preload.ready() == nullptr);
  CHECK_FALSE(f.preload.NextTimer());  // nothing left to continue
  REQUIRE(f.answers.size() == 1);
  CHECK(f.answers[0].first == 4);
  CHECK(f.answers[0].second.imported.empty());  // workers start without the preload
}

TEST_CASE("preload zygote: a drop cancels a start still due [unit]", "[unit]") {
  Fixture f(/*on_request=*/true);
  f.preload.OnHello();
  f.preload.OnPreloadRequest(/*hello_sent=*/true);
  REQUIRE(f.preload.NextTimer());
  f.preload.Drop("a test");
  CHECK_FALSE(f.preload.NextTimer());
  f.preload.CheckTimers(Clock::now() + std::chrono::seconds(1));
  CHECK(f.preload.pending_fd() == -1);
  CHECK(f.preload.warm());
}

}  // namespace preload_zygote_test
