// SessionHibernator over HostBackend, without the manager's facade: a save stops the sandbox and
// a call resumes the session into a new one with its files and globals (pickled: the host may
// lack dill); two calls resume it once; a fork of a live or a saved session is a copy that
// diverges; a save too large for the session's memory leaves it live; a named subject's saved
// budget; a close during a save waits for it; hibernation off says so. Seconds, without root,
// an image or a daemon.
#include "runtime/session/session_hibernator.h"

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/session/session_id.h"
#include "runtime/session/session_owner.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_parts.h"

namespace sandbox::session_hibernator_test {
namespace {

using namespace std::chrono_literals;
using testing::Hibernation;
using testing::SessionParts;

TEST_CASE("session hibernator: a save stops the sandbox, and a call resumes files and globals",
          "[unit]") {
  SessionParts parts(Hibernation::kOn);
  auto session = parts.Create();
  const std::string id = session->id;
  const auto created = session->created;
  parts.Stdout(id, "x = 41\nopen('/mnt/data/kept.txt', 'w').write('kept')");
  auto first = parts.Started(id);
  session.reset();

  REQUIRE(parts.hibernator->Hibernate(id));
  CHECK(first->destroyed);
  CHECK(parts.registry->Find(id) == nullptr);
  CHECK(parts.saved->Contains(id));
  CHECK(parts.hibernator->Hibernate(id));  // hibernated already: nothing to do

  parts.clock.Advance(1h);
  auto resumed = parts.lifecycle->Lookup(id);
  REQUIRE(resumed);
  CHECK((*resumed)->id == id);
  // Its creation kept (as saved, to the second), not the resume's hour later.
  CHECK(std::chrono::abs((*resumed)->created - created) < 1s);
  CHECK((*resumed)->resume_note.has_value());
  CHECK(parts.Started(id) != first);
  CHECK(parts.Stdout(id, "print(x + 1, open('/mnt/data/kept.txt').read())") == "42 kept\n");
}

TEST_CASE("session hibernator: two calls naming a saved session resume it once", "[unit]") {
  SessionParts parts(Hibernation::kOn);
  const std::string id = parts.Create()->id;
  parts.Stdout(id, "x = 1");
  REQUIRE(parts.hibernator->Hibernate(id));
  auto one = std::async(std::launch::async, [&] { return parts.lifecycle->Lookup(id); });
  auto two = std::async(std::launch::async, [&] { return parts.lifecycle->Lookup(id); });
  auto a = one.get();
  auto b = two.get();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a == *b);
  CHECK(parts.backend.started().size() == 2);  // the first sandbox and one resume
}

TEST_CASE("session hibernator: a fork of a live session is a saved copy that diverges", "[unit]") {
  SessionParts parts(Hibernation::kOn);
  auto session = parts.Create();
  parts.Stdout(session->id, "x = 'original'\nopen('/mnt/data/f.txt', 'w').write('1')");
  auto fork_id = parts.hibernator->Fork(session->id);
  REQUIRE(fork_id);
  CHECK(*fork_id != session->id);
  CHECK(parts.saved->Contains(*fork_id));
  CHECK(parts.registry->Find(*fork_id) == nullptr);  // hibernated until its first call
  CHECK_FALSE(parts.saved->Contains(session->id));   // the original is untouched, live
  CHECK_FALSE(session->busy);

  CHECK(parts.Stdout(*fork_id, "x = 'fork'\nopen('/mnt/data/f.txt', 'w').write('2')\nprint(x)") ==
        "fork\n");
  CHECK(parts.Stdout(session->id, "print(x, open('/mnt/data/f.txt').read())") == "original 1\n");
}

TEST_CASE("session hibernator: a fork of a saved session copies it without waking it", "[unit]") {
  SessionParts parts(Hibernation::kOn);
  const std::string id = parts.Create()->id;
  parts.Stdout(id, "x = 7");
  REQUIRE(parts.hibernator->Hibernate(id));
  auto fork_id = parts.hibernator->Fork(id);
  REQUIRE(fork_id);
  CHECK(parts.backend.started().size() == 1);  // nothing resumed for the copy
  CHECK(parts.saved->Contains(id));
  CHECK(parts.Stdout(*fork_id, "print(x)") == "7\n");

  auto unknown = parts.hibernator->Fork(NewSessionId(""));
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == ErrorCode::kSessionNotFound);
}

TEST_CASE("session hibernator: a state above the session's memory is refused, the session lives",
          "[unit]") {
  SessionParts parts(Hibernation::kOn);
  SessionOptions small;
  small.memory_bytes = 40ull << 20;  // the cap of its saved state
  auto session = parts.Create(small);
  parts.Stdout(session->id, "big = bytes(50 << 20)\nkeep = 1");
  auto refused = parts.hibernator->Hibernate(session->id);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kArtifactTooLarge);
  CHECK_FALSE(session->closed);
  CHECK(parts.registry->Find(session->id) == session);
  CHECK_FALSE(parts.saved->Contains(session->id));
  // Not retried by the reaper until it is used again.
  CHECK(session->unsaveable_at_ms == session->last_used_ms);
  CHECK(parts.Stdout(session->id, "print(keep)") == "1\n");
}

TEST_CASE("session hibernator: a subject's saved budget refuses a fork and evicts for a save",
          "[unit]") {
  SessionParts parts(Hibernation::kOn,
                     [](SessionConfig& config) { config.subject_quota.saved.max_saved = 1; });
  ActingSubject alice("alice");
  const std::string first = parts.Create()->id;
  parts.Stdout(first, "x = 1");
  REQUIRE(parts.hibernator->Hibernate(first));
  // A fork is new data on demand: refused, naming the budget, when it does not fit.
  auto fork = parts.hibernator->Fork(first);
  REQUIRE_FALSE(fork);
  CHECK(fork.error().code == ErrorCode::kMaxSessions);
  // A session saving itself makes room by evicting its owner's oldest save.
  const std::string second = parts.Create()->id;
  parts.Stdout(second, "y = 2");
  parts.clock.Advance(1min);
  REQUIRE(parts.hibernator->Hibernate(second));
  CHECK(parts.saved->Contains(second));
  CHECK_FALSE(parts.saved->Contains(first));
}

TEST_CASE("session hibernator: a close while the session is being saved waits, then deletes it",
          "[unit]") {
  SessionParts parts(Hibernation::kOn);
  const std::string id = parts.Create()->id;
  const std::string saving = parts.Started(id)->data_dir + "/saving";
  // A global whose pickling announces the save (a file the test sees on the host) and then takes
  // a while: the reaper's save of a big state on a loaded host.
  parts.Stdout(id,
               "import time\n"
               "class Slow:\n"
               "    def __reduce__(self):\n"
               "        open('/mnt/data/saving', 'w').close()\n"
               "        time.sleep(1.5)\n"
               "        return (int, ())\n"
               "slow = Slow()\n");
  auto hibernated = std::async(std::launch::async, [&] { return parts.hibernator->Hibernate(id); });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(saving) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(std::filesystem::exists(saving));
  // Mid-save: it said session_busy at once, where every call waits for the save.
  auto closed = parts.lifecycle->Close(id, /*force=*/false, SessionLifecycle::Teardown::kWait);
  INFO((closed ? std::string() : closed.error().message));
  CHECK(closed);
  REQUIRE(hibernated.get());
  // Closed for good: neither live nor saved, nothing left to resume.
  CHECK(parts.registry->Find(id) == nullptr);
  CHECK_FALSE(parts.saved->Contains(id));
  auto again = parts.lifecycle->Lookup(id);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == ErrorCode::kSessionNotFound);
  CHECK(parts.backend.started().size() == 1);  // never resumed to be closed
}

TEST_CASE("session hibernator: with hibernation off, a save and a fork say so", "[unit]") {
  SessionParts parts;  // hibernation off: no saved sessions
  const std::string id = parts.Create()->id;
  auto hibernate = parts.hibernator->Hibernate(id);
  REQUIRE_FALSE(hibernate);
  CHECK(hibernate.error().code == ErrorCode::kInvalidArgument);
  CHECK(hibernate.error().message.find("SANDBOX_HIBERNATE_AFTER_S=0") != std::string::npos);
  auto fork = parts.hibernator->Fork(id);
  REQUIRE_FALSE(fork);
  CHECK(fork.error().code == ErrorCode::kInvalidArgument);
  CHECK(parts.registry->Find(id) != nullptr);
}

}  // namespace
}  // namespace sandbox::session_hibernator_test
