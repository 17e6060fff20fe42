// When cold sessions' zygotes start (issue #28): only in a quiet moment, one turn at a time and
// spaced out, never beside a running call unless the server has been busy for max_wait. The
// idle measure is the test's own (what SessionManager::IdleFor reports), so "busy" and "quiet"
// are states the test sets, not timings it hopes for.
#include "runtime/session/cold_preload_queue.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

namespace sandbox::cold_preload_queue_test {
namespace {

using Clock = std::chrono::steady_clock;
using Outcome = ColdPreloadQueue::Outcome;

// The server's idle measure, as SessionManager gives it: zero while busy, else the time since
// the quiet began.
struct Server {
  std::atomic<bool> busy{true};
  std::atomic<int64_t> quiet_since_ns{0};
  void SetBusy(bool now_busy) {
    if (!now_busy) quiet_since_ns = Clock::now().time_since_epoch().count();
    busy = now_busy;
  }
  ColdPreloadQueue::IdleFor Measure() {
    return [this]() -> Clock::duration {
      if (busy) return Clock::duration::zero();
      return Clock::now() - Clock::time_point(Clock::duration(quiet_since_ns.load()));
    };
  }
};

// Turns that record when they ran and whether the server was busy then.
struct Turns {
  std::mutex mutex;
  std::vector<int> order;
  std::vector<Clock::time_point> at;
  std::vector<bool> during_busy;
  ColdPreloadQueue::Turn Make(Server& server, int n, Outcome outcome = Outcome::kStarted) {
    return [this, &server, n, outcome] {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(n);
      at.push_back(Clock::now());
      during_busy.push_back(server.busy);
      return outcome;
    };
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mutex);
    return order.size();
  }
  bool WaitFor(size_t n, Clock::duration timeout) {
    auto deadline = Clock::now() + timeout;
    while (Count() < n && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
    return Count() >= n;
  }
};

ColdPreloadQueue::Timing Fast(std::chrono::milliseconds max_wait = 60s) {
  return {.quiet_stretch = 30ms, .spacing = 80ms, .max_wait = max_wait, .poll = 2ms};
}

TEST_CASE("cold preload queue: no turn while the server is busy, one once it is quiet", "[unit]") {
  Server server;
  Turns turns;
  ColdPreloadQueue queue(server.Measure(), Fast());
  queue.Add(turns.Make(server, 1));
  std::this_thread::sleep_for(200ms);  // busy throughout: a turn now would be a failure
  CHECK(turns.Count() == 0);
  CHECK(queue.waiting() == 1);
  auto quiet_at = Clock::now();
  server.SetBusy(false);
  REQUIRE(turns.WaitFor(1, 10s));
  CHECK(turns.at[0] - quiet_at >= 30ms);  // only after a whole quiet stretch
  CHECK_FALSE(turns.during_busy[0]);
  CHECK(queue.waiting() == 0);
}

TEST_CASE("cold preload queue: turns go in order, spaced out, each after a quiet stretch",
          "[unit]") {
  Server server;
  Turns turns;
  ColdPreloadQueue queue(server.Measure(), Fast());
  for (int n = 1; n <= 3; ++n) queue.Add(turns.Make(server, n));
  server.SetBusy(false);
  REQUIRE(turns.WaitFor(3, 10s));
  CHECK(turns.order == std::vector<int>{1, 2, 3});
  for (size_t i = 1; i < turns.at.size(); ++i) CHECK(turns.at[i] - turns.at[i - 1] >= 80ms);
}

TEST_CASE("cold preload queue: a call that begins stops the next turn until quiet again",
          "[unit]") {
  Server server;
  Turns turns;
  ColdPreloadQueue queue(server.Measure(), Fast());
  queue.Add(turns.Make(server, 1));
  queue.Add(turns.Make(server, 2));
  server.SetBusy(false);
  REQUIRE(turns.WaitFor(1, 10s));
  server.SetBusy(true);  // inside the spacing: the second waits for the next quiet moment
  std::this_thread::sleep_for(250ms);
  CHECK(turns.Count() == 1);
  server.SetBusy(false);
  REQUIRE(turns.WaitFor(2, 10s));
  CHECK(turns.during_busy == std::vector<bool>{false, false});
}

TEST_CASE("cold preload queue: a server never quiet still gets one turn per max_wait", "[unit]") {
  Server server;  // busy from start to end
  Turns turns;
  ColdPreloadQueue queue(server.Measure(), Fast(/*max_wait=*/150ms));
  auto added = Clock::now();
  queue.Add(turns.Make(server, 1));
  queue.Add(turns.Make(server, 2));
  REQUIRE(turns.WaitFor(2, 10s));
  CHECK(turns.at[0] - added >= 150ms);
  CHECK(turns.at[1] - turns.at[0] >= 150ms);  // spacing, then another whole max_wait
}

TEST_CASE("cold preload queue: a turn to retry goes first again, and a gone one takes no spacing",
          "[unit]") {
  Server server;
  Turns turns;
  ColdPreloadQueue queue(server.Measure(), Fast());
  std::atomic<int> tries{0};
  queue.Add([&]() {
    // Its own call held the agent the first time.
    return ++tries == 1 ? Outcome::kRetry : Outcome::kStarted;
  });
  queue.Add(turns.Make(server, 2));
  server.SetBusy(false);
  REQUIRE(turns.WaitFor(1, 10s));
  CHECK(tries == 2);  // retried before the second turn ran

  Turns more;
  ColdPreloadQueue::Timing long_spacing = Fast();
  long_spacing.spacing = 5s;
  ColdPreloadQueue second(server.Measure(), long_spacing);
  second.Add(more.Make(server, 1, Outcome::kGone));
  second.Add(more.Make(server, 2));
  REQUIRE(more.WaitFor(2, 4s));  // nothing started for the gone one: no spacing after it
}

TEST_CASE("cold preload queue: destroying it drops the turns not taken", "[unit]") {
  Server server;
  Turns turns;
  {
    ColdPreloadQueue queue(server.Measure(), Fast());
    queue.Add(turns.Make(server, 1));
  }
  CHECK(turns.Count() == 0);
}

}  // namespace
}  // namespace sandbox::cold_preload_queue_test
