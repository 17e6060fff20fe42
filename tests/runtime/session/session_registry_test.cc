// SessionRegistry: the caps held by reservations, and what an id names for the calling subject
// (live, saved on this replica, another subject's, another replica's), with a real on-disk
// SavedSessions. The registry never touches a session's sandbox, so the sessions here are bare
// records: the manager's tests run the same rules over HostBackend sandboxes.
#include "runtime/session/session_registry.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_owner.h"
#include "tests/support/test_support.h"

namespace sandbox::session_registry_test {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<LiveSession> Live(const std::string& owner, const std::string& replica = "") {
  auto session = std::make_shared<LiveSession>();
  session->id = NewSessionId(replica);
  session->owner = owner;
  return session;
}

TEST_CASE("session registry: reservations hold the server's cap and each subject's", "[unit]") {
  SessionRegistry registry("", nullptr);
  auto first = registry.Reserve("alice", /*max_sessions=*/3, /*owner_max_sessions=*/1);
  REQUIRE(first);
  CHECK(registry.creating() == 1);
  // alice is at her quota while her first is being created; bob and the single user are not.
  auto second = registry.Reserve("alice", 3, 1);
  REQUIRE_FALSE(second);
  CHECK(second.error().code == ErrorCode::kMaxSessions);
  CHECK(second.error().message.find("SANDBOX_SUBJECT_MAX_SESSIONS") != std::string::npos);
  registry.Add(Live("bob"));
  auto single_user = registry.Reserve("", 3, 1);
  REQUIRE(single_user);
  // Three places taken (two being created, one live): the server's cap.
  auto over_cap = registry.Reserve("carol", 3, 0);
  REQUIRE_FALSE(over_cap);
  CHECK(over_cap.error().message.find("maximum of 3 sessions") != std::string::npos);
  {
    auto given_up = std::move(*first);  // a creation that failed gives its place back
  }
  CHECK(registry.creating() == 1);
  CHECK(registry.Reserve("alice", 3, 1));
}

TEST_CASE("session registry: another subject's session reads as an unknown one", "[unit]") {
  SessionRegistry registry("", nullptr);
  auto alices = Live("alice");
  registry.Add(alices);
  {
    ActingSubject alice("alice");
    auto found = registry.Lookup(alices->id);
    REQUIRE(found);
    CHECK(found->live == alices);
    CHECK(registry.Visible().size() == 1);
  }
  ActingSubject bob("bob");
  auto hidden = registry.Lookup(alices->id);
  auto unknown = registry.Lookup(NewSessionId());
  REQUIRE_FALSE(hidden);
  REQUIRE_FALSE(unknown);
  CHECK(hidden.error().code == ErrorCode::kSessionNotFound);
  CHECK(registry.Visible().empty());
  // Word for word, but for the id.
  std::string hidden_text = hidden.error().message;
  hidden_text.replace(hidden_text.find(alices->id), alices->id.size(), "ID");
  std::string unknown_text = unknown.error().message;
  unknown_text.replace(unknown_text.find("sess_"), alices->id.size(), "ID");
  CHECK(hidden_text == unknown_text);

  auto malformed = registry.Lookup("not-an-id");
  REQUIRE_FALSE(malformed);
  CHECK(malformed.error().code == ErrorCode::kInvalidSessionId);
}

TEST_CASE("session registry: a saved session is found on the replica its id names only", "[unit]") {
  testing::TempDir dir;
  SavedSessions saved(SavedSessionsConfig{.dir = dir.path(), .max_total_bytes = 1 << 20});
  SessionRegistry registry("r1", &saved);
  SavedSessionMeta mine;
  mine.id = NewSessionId("r1");
  mine.owner = "alice";
  REQUIRE(saved.Save(mine, "archive"));
  SavedSessionMeta siblings;  // a replica sharing the state dir saved it
  siblings.id = NewSessionId("r2");
  REQUIRE(saved.Save(siblings, "archive"));

  {
    ActingSubject alice("alice");
    auto found = registry.Lookup(mine.id);
    REQUIRE(found);
    CHECK(found->live == nullptr);
    CHECK(found->saved);
  }
  {
    ActingSubject bob("bob");
    CHECK_FALSE(registry.SavedAndVisible(mine.id));
    CHECK_FALSE(registry.Lookup(mine.id));
  }
  CHECK_FALSE(registry.SavedAndVisible(siblings.id));
  auto elsewhere = registry.Lookup(siblings.id);
  REQUIRE_FALSE(elsewhere);
  CHECK(elsewhere.error().code == ErrorCode::kSessionNotFound);
  using Detail = std::pair<std::string, std::string>;
  CHECK(elsewhere.error().details ==
        std::vector<Detail>{{"reason", "replica_unavailable"}, {"replica", "r2"}});
}

TEST_CASE("session registry: a lookup waits for a hibernation in progress", "[unit]") {
  SessionRegistry registry("", nullptr);
  auto session = Live("");
  registry.Add(session);
  registry.BeginHibernating(*session);  // unlisted and marked, together
  CHECK(registry.Find(session->id) == nullptr);
  auto looked_up = std::async(std::launch::async, [&] { return registry.IsLive(session->id); });
  CHECK(looked_up.wait_for(200ms) == std::future_status::timeout);
  registry.EndHibernating(session->id);
  CHECK(looked_up.get() == false);

  // A session listed under the id since (a resume) is not unlisted by a stale hibernation.
  auto resumed = std::make_shared<LiveSession>();
  resumed->id = session->id;
  registry.Add(resumed);
  registry.BeginHibernating(*session);
  registry.EndHibernating(session->id);
  CHECK(registry.Find(session->id) == resumed);
  registry.RemoveIf(session);  // not the one listed: stays
  CHECK(registry.Count() == 1);
  CHECK(registry.Remove(session->id) == resumed);
  CHECK(registry.CountNotLive({session->id}) == 1);
}

}  // namespace
}  // namespace sandbox::session_registry_test
