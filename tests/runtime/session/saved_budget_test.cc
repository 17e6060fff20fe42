// Saved sessions budgeted per subject (runtime/session/saved_budget.h), and a drain that keeps
// what it should save (issue #36, defects 2 and 3): one subject's forks never evict another
// subject's saved session, a fork beyond a budget is refused naming it, a hibernation evicts only
// its own subject's oldest saves; an idle session in a drain is hibernated, not closed, and a
// new manager on the state dir resumes it with its variable and its file. The rules as a pure
// decision, the on-disk store, and the session manager over HostBackend (real save and restore,
// pickle when the host has no dill): seconds, without root.
#include "runtime/session/saved_budget.h"

#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/session/quota_claim.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox::saved_budget_test {
namespace {

using namespace std::chrono_literals;
using testing::ManualClock;

const std::string kAlice = "oauth:alice";
const std::string kBob = "oauth:bob";

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool Mentions(const Error& error, const std::string& what) {
  return error.message.find(what) != std::string::npos;
}

std::string Detail(const Error& error, const std::string& key) {
  for (const auto& [name, value] : error.details) {
    if (name == key) return value;
  }
  return "";
}

std::string Id(char c) { return "sess_" + std::string(32, c); }

TEST_CASE("saved budget: a fork evicts nothing, a save of itself evicts only its owner's oldest",
          "[unit]") {
  // Oldest first: alice's, then bob's two.
  const std::vector<StoredSave> stored = {
      {Id('a'), kAlice, 100}, {Id('b'), kBob, 1500}, {Id('c'), kBob, 1500}};
  SECTION("a fork that does not fit the server's cap is refused, naming it") {
    auto plan = PlanSave(stored, {Id('d'), kBob, 1500}, SaveKind::kCopy, {}, 4000);
    REQUIRE_FALSE(plan);
    CHECK(plan.error().code == ErrorCode::kMaxSessions);
    CHECK(Mentions(plan.error(), "SANDBOX_SAVED_MAX_BYTES"));
    CHECK(Detail(plan.error(), "reason") == "saved_budget");
    CHECK(Detail(plan.error(), "budget") == "SANDBOX_SAVED_MAX_BYTES");
    // One that fits is stored beside the others, evicting nobody.
    auto fits = PlanSave(stored, {Id('d'), kBob, 800}, SaveKind::kCopy, {}, 4000);
    REQUIRE(fits);
    CHECK(fits->empty());
  }
  SECTION("a save of itself makes room from its owner's oldest, never another's") {
    auto plan = PlanSave(stored, {Id('d'), kBob, 1500}, SaveKind::kSelf, {}, 4000);
    REQUIRE(plan);
    CHECK(*plan == std::vector<std::string>{Id('b')});
    // Alice's own save is not enough room: refused, bob's saves untouched.
    auto alices = PlanSave(stored, {Id('e'), kAlice, 1200}, SaveKind::kSelf, {}, 4000);
    REQUIRE_FALSE(alices);
    CHECK(Mentions(alices.error(), "evicts no other user's saved session"));
    // An earlier save of the same session is replaced, not counted.
    auto again = PlanSave(stored, {Id('c'), kBob, 2300}, SaveKind::kSelf, {}, 4000);
    REQUIRE(again);
    CHECK(again->empty());
  }
  SECTION("the subject's own budget: count and bytes") {
    const SavedBudget two{.max_saved = 2, .max_bytes = 0};
    auto fork = PlanSave(stored, {Id('d'), kBob, 10}, SaveKind::kCopy, two, 1 << 20);
    REQUIRE_FALSE(fork);
    CHECK(Detail(fork.error(), "budget") == "SANDBOX_SUBJECT_MAX_SAVED");
    CHECK(Mentions(fork.error(), "3 saved sessions of yours, above your budget of 2"));
    auto self = PlanSave(stored, {Id('d'), kBob, 10}, SaveKind::kSelf, two, 1 << 20);
    REQUIRE(self);
    CHECK(*self == std::vector<std::string>{Id('b')});
    const SavedBudget bytes{.max_saved = 0, .max_bytes = 3500};
    auto big = PlanSave(stored, {Id('d'), kBob, 600}, SaveKind::kCopy, bytes, 1 << 20);
    REQUIRE_FALSE(big);
    CHECK(Detail(big.error(), "budget") == "SANDBOX_SUBJECT_SAVED_BYTES");
    auto alone = PlanSave(stored, {Id('d'), kBob, 3600}, SaveKind::kSelf, bytes, 1 << 20);
    REQUIRE_FALSE(alone);
    CHECK(alone.error().code == ErrorCode::kUploadTooLarge);
    // The single user of a server has the server's cap alone.
    auto single = PlanSave({{Id('a'), "", 100}, {Id('b'), "", 100}}, {Id('c'), "", 100},
                           SaveKind::kCopy, two, 1 << 20);
    CHECK(single);
  }
  CHECK(UsageOf(stored, kBob).count == 2);
  CHECK(UsageOf(stored, kBob).bytes == 3000);
  CHECK(UsageOf(stored, "oauth:carol").count == 0);
}

// A manager over HostBackend on a state dir of its own, hibernation on, an injected clock.
struct Server {
  explicit Server(const std::string& state_dir, uint64_t saved_max_bytes = 64ull << 20) {
    SessionConfig config;
    config.default_image = "host";
    config.state_dir = state_dir;
    config.max_sessions = 6;
    config.exec_timeout_s = 30;
    config.ttl = std::chrono::minutes(30);
    config.hibernate_after = std::chrono::minutes(10);
    config.saved_max_bytes = saved_max_bytes;
    config.clock = [this] { return clock.Now(); };
    backend = std::make_shared<testing::HostBackend>();
    manager = std::make_unique<SessionManager>(config, backend, testing::HostImageResolver());
  }
  std::string Create(const std::string& subject) {
    ActingSubject acting(subject);
    auto info = manager->Create({});
    REQUIRE(info);
    return info->id;
  }
  Result<RunResult> Run(const std::string& subject, const std::string& id,
                        const std::string& code) {
    ActingSubject acting(subject);
    RunRequest request;
    request.code = code;
    request.timeout_s = 20;
    return manager->Run(id, request);
  }
  std::string Python(const std::string& subject, const std::string& id, const std::string& code) {
    auto run = Run(subject, id, code);
    INFO(code);
    REQUIRE(run);
    INFO(run->stderr_text);
    CHECK(run->exit_code == 0);
    return run->stdout_text;
  }

  ManualClock clock;
  std::shared_ptr<testing::HostBackend> backend;
  std::unique_ptr<SessionManager> manager;
};

TEST_CASE("saved budget: one subject's forks never evict another subject's saved session",
          "[unit]") {
  testing::TempDir state;
  Server server(state.path(), 4ull << 20);
  std::string alices = server.Create(kAlice);
  server.Python(kAlice, alices, "work = 'alice keeps this'");
  REQUIRE(server.manager->Hibernate(alices));  // as the reaper does, idle

  // Bob hibernates a session with a 1.5 MiB file and forks it twice: the copies would need
  // 4.5 MiB of the 4 MiB all saved sessions may take.
  std::string bobs = server.Create(kBob);
  server.Python(kBob, bobs, "import os\nopen('/mnt/data/blob', 'wb').write(os.urandom(3 << 19))");
  REQUIRE(server.manager->Hibernate(bobs));
  Result<SessionInfo> first, second;
  {
    ActingSubject bob(kBob);
    first = server.manager->Fork(bobs);
    second = server.manager->Fork(bobs);
  }
  REQUIRE(first);
  REQUIRE_FALSE(second);
  CHECK(second.error().code == ErrorCode::kMaxSessions);
  CHECK(Mentions(second.error(), "SANDBOX_SAVED_MAX_BYTES"));
  CHECK(Mentions(second.error(), "evicts no other user's saved session"));
  // Bob's saves count against him where a quota sees them.
  CHECK(server.manager->saved()->UsageOf(kBob).count == 2);
  CHECK(server.manager->saved()->UsageOf(kBob).bytes > (3ull << 20));

  // Alice's saved work is still hers.
  CHECK(server.Python(kAlice, alices, "print(work)") == "alice keeps this\n");

  // A fork of a live session is held to the same rule: bob's, resumed (its last save kept).
  server.Python(kBob, bobs, "pass");
  {
    ActingSubject bob(kBob);
    auto live_fork = server.manager->Fork(bobs);
    REQUIRE_FALSE(live_fork);
    CHECK(Detail(live_fork.error(), "budget") == "SANDBOX_SAVED_MAX_BYTES");
  }
}

TEST_CASE("saved budget: a subject's own budget, from the settings or its token's claim",
          "[unit]") {
  testing::TempDir state;
  Server server(state.path());
  // Bob's token says he may keep one saved session.
  auto claim = ParseQuotaClaim(nlohmann::json{{"max_saved", 1}, {"saved_bytes", "2m"}});
  REQUIRE(claim);
  CHECK(claim->saved_bytes == 2ull << 20);
  RememberQuotaClaim(kBob, *claim);
  CHECK(server.manager->QuotaOf(kBob).saved.max_saved == 1);
  std::string bobs = server.Create(kBob);
  server.Python(kBob, bobs, "v = 1");
  REQUIRE(server.manager->Hibernate(bobs));
  {
    ActingSubject bob(kBob);
    auto fork = server.manager->Fork(bobs);
    REQUIRE_FALSE(fork);
    CHECK(Detail(fork.error(), "budget") == "SANDBOX_SUBJECT_MAX_SAVED");
    CHECK(Mentions(fork.error(), "your token's quota claim"));
  }
  // A second session of his hibernating evicts his own older save, nobody else's.
  std::string alices = server.Create(kAlice);
  server.Python(kAlice, alices, "a = 1");
  REQUIRE(server.manager->Hibernate(alices));
  std::string newer = server.Create(kBob);
  server.Python(kBob, newer, "w = 2");
  REQUIRE(server.manager->Hibernate(newer));
  CHECK_FALSE(server.manager->saved()->Contains(bobs));
  CHECK(server.manager->saved()->Contains(newer));
  CHECK(server.manager->saved()->Contains(alices));
  RememberQuotaClaim(kBob, std::nullopt);
}

TEST_CASE("drain: an idle session is hibernated, not closed, and a new server resumes it",
          "[unit]") {
  testing::TempDir state;
  std::string id;
  {
    Server server(state.path());
    id = server.Create("");
    server.Python("", id,
                  "v = 'kept across the drain'\nopen('/mnt/data/f.txt', 'w').write('file')");
    server.manager->StartDrain(2s);
    server.clock.Advance(3s);
    server.manager->ExpireIdle();
    // The reaper may be saving it at the same moment: wait until it is saved.
    for (int i = 0; i < 200 && server.manager->SessionCount() > 0; ++i) {
      std::this_thread::sleep_for(50ms);
    }
    CHECK(server.manager->SessionCount() == 0);  // the drain ends
    auto info = server.manager->Get(id);
    REQUIRE(info);
    CHECK(info->state == "hibernated");
    for (const auto& sandbox : server.backend->started()) CHECK(sandbox->destroyed);
  }
  REQUIRE(Exists(state.Join("hibernated/" + id)));
  Server next(state.path());
  CHECK(next.Python("", id, "print(v, open('/mnt/data/f.txt').read())") ==
        "kept across the drain file\n");
}

}  // namespace
}  // namespace sandbox::saved_budget_test
