// SessionLifecycle over HostBackend, without the manager's facade: a creation listed in the
// registry, the busy lease (one call at a time, the last use stamped on the test's clock, a
// broken agent retired at its end), closing now or in the background, the idle expiry, a drain,
// the owner's quota and the warm pool. Seconds, without root, an image or a daemon.
#include "runtime/session/session_lifecycle.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/session/session_owner.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_parts.h"

namespace sandbox::session_lifecycle_test {
namespace {

using namespace std::chrono_literals;
using testing::Hibernation;
using testing::SessionParts;

// Waits until `done` holds: the state the test needs, not a sleep.
template <typename Predicate>
bool WaitFor(Predicate done, std::chrono::seconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST_CASE("session lifecycle: a creation is listed, and a close removes it and its sandbox",
          "[unit]") {
  SessionParts parts;
  auto session = parts.Create();
  CHECK(parts.registry->Find(session->id) == session);
  CHECK(session->created == parts.clock.Now());
  CHECK(parts.Stdout(session->id, "x = 41\nprint(x + 1)") == "42\n");
  auto control = parts.Started(session->id);
  REQUIRE(control);

  REQUIRE(parts.lifecycle->Close(session->id, false, SessionLifecycle::Teardown::kWait));
  CHECK(session->closed);
  CHECK(parts.registry->Count() == 0);
  session.reset();  // the last reference: the sandbox is reaped and removed
  CHECK(control->destroyed);
  auto again = parts.lifecycle->Lookup(control->spec.session_id);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == ErrorCode::kSessionNotFound);
}

TEST_CASE("session lifecycle: a lease holds the session busy and stamps its last use", "[unit]") {
  SessionParts parts;
  auto session = parts.Create();
  {
    auto lease = parts.lifecycle->Acquire(session->id);
    REQUIRE(lease);
    CHECK(session->busy);
    CHECK(parts.lifecycle->calls_in_flight() == 1);
    auto second = parts.lifecycle->Acquire(session->id);
    REQUIRE_FALSE(second);
    CHECK(second.error().code == ErrorCode::kSessionBusy);
    // Busy: a close without force refuses, and the session stays.
    auto refused = parts.lifecycle->Close(session->id, false, SessionLifecycle::Teardown::kWait);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::kSessionBusy);
    parts.clock.Advance(5min);
  }
  CHECK_FALSE(session->busy);
  CHECK(parts.lifecycle->calls_in_flight() == 0);
  CHECK(session->LastUsed() ==
        std::chrono::time_point_cast<std::chrono::milliseconds>(parts.clock.Now()));
}

TEST_CASE("session lifecycle: a call that finds the agent dead retires the session", "[unit]") {
  SessionParts parts;
  auto session = parts.Create();
  parts.Started(session->id)->KillAgent();
  auto run = parts.Python(session->id, "print(1)");
  REQUIRE_FALSE(run);
  // The lease's end found the agent broken: closed and unlisted, not left idle and failing.
  CHECK(session->closed);
  CHECK(parts.registry->Count() == 0);
  auto after = parts.lifecycle->Acquire(session->id);
  REQUIRE_FALSE(after);
  CHECK(after.error().code == ErrorCode::kSessionNotFound);
}

TEST_CASE("session lifecycle: a background close returns at once, the reaper removes the sandbox",
          "[unit]") {
  SessionParts parts;
  auto session = parts.Create();
  auto control = parts.Started(session->id);
  const std::string id = session->id;
  session.reset();  // the lifecycle's teardown list holds the last reference
  REQUIRE(parts.lifecycle->Close(id, false, SessionLifecycle::Teardown::kBackground));
  CHECK(parts.registry->Count() == 0);
  CHECK(WaitFor([&] { return control->destroyed.load(); }));
}

TEST_CASE("session lifecycle: idle sessions expire on the TTL, a busy one never", "[unit]") {
  SessionParts parts;
  auto idle = parts.Create();
  auto busy = parts.Create();
  auto lease = parts.lifecycle->Acquire(busy->id);
  REQUIRE(lease);
  parts.clock.Advance(29min);
  CHECK(parts.lifecycle->ExpireIdle() == 0);
  parts.clock.Advance(2min);
  CHECK(parts.lifecycle->ExpireIdle() == 1);
  CHECK(idle->closed);
  CHECK_FALSE(busy->closed);
  CHECK(parts.registry->Count() == 1);
}

TEST_CASE("session lifecycle: a drain refuses new sessions and closes idle ones on its own time",
          "[unit]") {
  SessionParts parts;
  auto open = parts.Create();
  parts.lifecycle->StartDrain(std::chrono::milliseconds(10s));
  CHECK(parts.lifecycle->draining());
  auto refused = parts.lifecycle->Create({});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kServerDraining);
  // Open sessions go on...
  CHECK(parts.Stdout(open->id, "print('on')") == "on\n");
  // ...until idle longer than the drain's time (hibernation off: closed, not saved).
  // The reaper looks every second while draining, and may be first.
  parts.clock.Advance(11s);
  (void)parts.lifecycle->ExpireIdle();
  CHECK(WaitFor([&] { return open->closed.load(); }));
  CHECK(parts.registry->Count() == 0);
}

TEST_CASE("session lifecycle: a named subject is held to its quota of sessions", "[unit]") {
  SessionParts parts(Hibernation::kOff,
                     [](SessionConfig& config) { config.subject_quota.max_sessions = 1; });
  ActingSubject alice("alice");
  auto first = parts.Create();
  CHECK(first->owner == "alice");
  auto second = parts.lifecycle->Create({});
  REQUIRE_FALSE(second);
  CHECK(second.error().code == ErrorCode::kMaxSessions);
  {
    ActingSubject bob("bob");
    CHECK(parts.Create()->owner == "bob");  // another subject's quota is its own
  }
  REQUIRE(parts.lifecycle->Close(first->id, false, SessionLifecycle::Teardown::kWait));
  CHECK(parts.lifecycle->Create({}));
}

TEST_CASE("session lifecycle: a creation takes the warm pool's sandbox at normal priority",
          "[unit]") {
  SessionParts parts(Hibernation::kOff, [](SessionConfig& config) { config.pool_size = 1; });
  REQUIRE(WaitFor([&] { return parts.lifecycle->PoolStatus()->ready == 1; }, 30s));
  auto pooled = parts.backend.started().at(0);
  CHECK(pooled->cpu_priority == CpuPriority::kBackground);
  auto session = parts.Create();
  CHECK(parts.Started(session->id) == pooled);
  CHECK(pooled->cpu_priority == CpuPriority::kNormal);
  CHECK(parts.lifecycle->PoolStatus()->claimed == 1);
  CHECK(parts.Stdout(session->id, "print('warm')") == "warm\n");
}

TEST_CASE("session lifecycle: without a pool there are no pool figures", "[unit]") {
  SessionParts parts;
  CHECK_FALSE(parts.lifecycle->PoolStatus());
}

}  // namespace
}  // namespace sandbox::session_lifecycle_test
