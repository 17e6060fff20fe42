#include "runtime/session/session_id.h"

#include <set>

#include <catch2/catch.hpp>

#include "runtime/session/session_manager.h"

TEST_CASE("session ids are sess_ and 12 lowercase hex digits, and differ", "[unit]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = sandbox::NewSessionId();
    REQUIRE(sandbox::IsValidSessionId(id));
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("malformed session ids are refused", "[unit]") {
  CHECK_FALSE(sandbox::IsValidSessionId(""));
  CHECK_FALSE(sandbox::IsValidSessionId("sess_"));
  CHECK_FALSE(sandbox::IsValidSessionId("sess_0123456789AB"));   // upper case
  CHECK_FALSE(sandbox::IsValidSessionId("sess_0123456789a"));    // too short
  CHECK_FALSE(sandbox::IsValidSessionId("sess_0123456789abc"));  // too long
  CHECK_FALSE(sandbox::IsValidSessionId("sess_../../etc/pas"));
  CHECK_FALSE(sandbox::IsValidSessionId("ses_0123456789abcd"));
  CHECK(sandbox::IsValidSessionId("sess_0123456789ab"));
}

namespace {

// A backend that starts nothing: enough for the manager's checks of ids.
class NoBackend : public sandbox::Backend {
 public:
  std::string name() const override { return "none"; }
  sandbox::Result<std::unique_ptr<sandbox::Sandbox>> Start(const sandbox::SandboxSpec&) override {
    return sandbox::Fail(sandbox::ErrorCode::kSandboxUnavailable, "no backend in this test");
  }
  sandbox::EnforcedLimits PlanLimits(const sandbox::Limits&) const override { return {}; }
  sandbox::Result<int> SweepOrphans() override { return 0; }
};

}  // namespace

TEST_CASE("a 1 MiB session id gives an error of a few bytes, quoting it cut", "[unit]") {
  sandbox::SessionManager sessions(sandbox::SessionConfig{}, std::make_shared<NoBackend>(),
                                   nullptr);
  std::string huge(1 << 20, 'x');
  auto closed = sessions.Close(huge);
  REQUIRE_FALSE(closed);
  CHECK(closed.error().code == sandbox::ErrorCode::kInvalidSessionId);
  CHECK(closed.error().message.size() < 1024);
  CHECK(closed.error().message.find("(1048576 bytes)") != std::string::npos);
  auto stat = sessions.Stat(huge, "/mnt/data");
  REQUIRE_FALSE(stat);
  CHECK(stat.error().message.size() < 1024);
}
