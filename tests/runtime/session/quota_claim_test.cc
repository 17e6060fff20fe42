// A subject's quota from its token's claim (SANDBOX_OAUTH_QUOTA_CLAIM): the claim is read
// strictly, overrides only what it names, never exceeds the server's own limits, and holds in a
// real SessionManager (over HostBackend) for that subject alone.
#include "runtime/session/quota_claim.h"

#include <memory>

#include <catch2/catch.hpp>

#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"

namespace sandbox::quota_claim_test {
namespace {

using Json = nlohmann::json;

// Subject names of their own: the remembered claims are process-wide, shared by every case.
std::string Subject(const char* name) { return std::string("oauth:quota-claim-test-") + name; }

}  // namespace

TEST_CASE("quota claim: members are read strictly, unknown ones ignored", "[unit]") {
  auto claim = ParseQuotaClaim(
      Json{{"max_sessions", 3}, {"memory", "512m"}, {"cpus", 1.5}, {"colour", "blue"}});
  REQUIRE(claim);
  CHECK(claim->max_sessions == 3);
  CHECK(claim->memory_bytes == (512ull << 20));
  CHECK(claim->cpus == 1.5);
  auto bytes = ParseQuotaClaim(Json{{"memory", 1073741824}});
  REQUIRE(bytes);
  CHECK(bytes->memory_bytes == (1ull << 30));
  CHECK_FALSE(bytes->max_sessions);
  CHECK_FALSE(bytes->cpus);
  REQUIRE(ParseQuotaClaim(Json::object()));
  for (const Json& bad :
       {Json("3 sessions"), Json::array(), Json{{"max_sessions", -1}}, Json{{"max_sessions", 1.5}},
        Json{{"max_sessions", "3"}}, Json{{"memory", "lots"}}, Json{{"memory", 1024}},
        Json{{"cpus", 0}}, Json{{"cpus", "2"}}, Json{{"cpus", 4096}}}) {
    INFO(bad.dump());
    auto refused = ParseQuotaClaim(bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("quota claim: overrides what it names, capped by the server's limits", "[unit]") {
  SubjectQuota settings{.max_sessions = 2, .max_memory_bytes = 256ull << 20, .max_cpus = 0.5};
  Limits server;
  server.memory_bytes = 1ull << 30;
  server.cpus = 2;
  auto raised =
      ApplyQuotaClaim(settings, {.max_sessions = 5, .memory_bytes = {}, .cpus = 1}, server, 10);
  CHECK(raised.max_sessions == 5);
  CHECK(raised.max_memory_bytes == (256ull << 20));  // not named: the settings'
  CHECK(raised.max_cpus == 1);
  auto capped = ApplyQuotaClaim(
      settings, {.max_sessions = 500, .memory_bytes = 64ull << 30, .cpus = 64}, server, 10);
  CHECK(capped.max_sessions == 10);
  CHECK(capped.max_memory_bytes == (1ull << 30));
  CHECK(capped.max_cpus == 2);
  auto lowered = ApplyQuotaClaim(
      settings, {.max_sessions = 1, .memory_bytes = 64ull << 20, .cpus = {}}, server, 10);
  CHECK(lowered.max_sessions == 1);
  CHECK(lowered.max_memory_bytes == (64ull << 20));
  CHECK(lowered.max_cpus == 0.5);
}

TEST_CASE("quota claim: remembered per subject, forgotten when a token claims none", "[unit]") {
  RememberQuotaClaim(Subject("a"), QuotaClaim{.max_sessions = 4, .memory_bytes = {}, .cpus = {}});
  RememberQuotaClaim(Subject("b"), QuotaClaim{.max_sessions = 1, .memory_bytes = {}, .cpus = {}});
  REQUIRE(RememberedQuotaClaim(Subject("a")));
  CHECK(RememberedQuotaClaim(Subject("a"))->max_sessions == 4);
  CHECK(RememberedQuotaClaim(Subject("b"))->max_sessions == 1);
  CHECK_FALSE(RememberedQuotaClaim(Subject("never")));
  RememberQuotaClaim(Subject("a"), std::nullopt);
  CHECK_FALSE(RememberedQuotaClaim(Subject("a")));
  CHECK(RememberedQuotaClaim(Subject("b")));
  RememberQuotaClaim(Subject("b"), std::nullopt);
}

TEST_CASE("quota claim: a session manager holds one subject to its claim, others to the settings",
          "[unit]") {
  SessionConfig config;
  config.default_image = "host";
  config.max_sessions = 6;
  config.exec_timeout_s = 30;
  config.max_code_bytes = 4096;
  config.max_output_bytes = 1000;
  config.subject_quota = {.max_sessions = 2, .max_memory_bytes = 0, .max_cpus = 0};
  SessionManager manager(config, std::make_shared<testing::HostBackend>(),
                         testing::HostImageResolver());
  const std::string claimed = Subject("one-session");
  const std::string plain = Subject("settings");
  RememberQuotaClaim(claimed, QuotaClaim{.max_sessions = 1, .memory_bytes = {}, .cpus = {}});
  {
    ActingSubject acting(claimed);
    REQUIRE(manager.Create({}));
    auto second = manager.Create({});
    REQUIRE_FALSE(second);
    CHECK(second.error().code == ErrorCode::kMaxSessions);
    CHECK_THAT(second.error().message, Catch::Contains("maximum of 1 live"));
  }
  {
    ActingSubject acting(plain);
    REQUIRE(manager.Create({}));
    REQUIRE(manager.Create({}));  // the settings' 2, untouched by the other's claim
    CHECK_FALSE(manager.Create({}));
  }
  RememberQuotaClaim(claimed, std::nullopt);  // back to the settings: a second one fits
  {
    ActingSubject acting(claimed);
    CHECK(manager.Create({}));
  }
  CHECK(manager.SessionCount() == 4);
}

}  // namespace sandbox::quota_claim_test
