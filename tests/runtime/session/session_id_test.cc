#include "runtime/session/session_id.h"

#include <set>

#include <catch2/catch.hpp>

#include "runtime/session/session_manager.h"

namespace session_id_test {

TEST_CASE("session ids are sess_ and 32 lowercase hex digits (128 bits), and differ", "[unit]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = sandbox::NewSessionId();
    REQUIRE(id.size() == 5 + 32);
    REQUIRE(sandbox::IsValidSessionId(id));
    REQUIRE(sandbox::ParseSessionId(id)->replica.empty());
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("a replica's session ids name it: sess_<replica>_<32 hex>", "[unit]") {
  std::string id = sandbox::NewSessionId("r2");
  CHECK(id.rfind("sess_r2_", 0) == 0);
  CHECK(id.size() == 8 + 32);
  auto parsed = sandbox::ParseSessionId(id);
  REQUIRE(parsed);
  CHECK(parsed->replica == "r2");
  std::string pod = sandbox::NewSessionId("mcp-sandbox-12");
  CHECK(sandbox::ParseSessionId(pod)->replica == "mcp-sandbox-12");
  const std::string hex32(32, 'a');
  CHECK_FALSE(sandbox::IsValidSessionId("sess_R2_" + hex32));   // upper case
  CHECK_FALSE(sandbox::IsValidSessionId("sess_2r_" + hex32));   // not a letter first
  CHECK_FALSE(sandbox::IsValidSessionId("sess_r2-_" + hex32));  // trailing '-'
  CHECK_FALSE(sandbox::IsValidSessionId("sess__" + hex32));     // empty replica
  CHECK_FALSE(sandbox::IsValidSessionId("sess_a_b_" + hex32));  // two separators
  CHECK_FALSE(sandbox::IsValidSessionId("sess_" + std::string(64, 'a') + "_" + hex32));
  CHECK_FALSE(sandbox::IsValidSessionId("sess_r2_0123456789ab"));  // the earlier form: no replica
  CHECK(sandbox::IsValidSessionId("sess_" + std::string(63, 'a') + "_" + hex32));
  // A StatefulSet pod's name as the replica: longer than the 16 characters once allowed.
  std::string long_pod = sandbox::NewSessionId("mcp-sandbox-statefulset-with-a-long-name-12");
  CHECK(long_pod.size() == 5 + 43 + 1 + 32);
  CHECK(sandbox::ParseSessionId(long_pod)->replica ==
        "mcp-sandbox-statefulset-with-a-long-name-12");
  CHECK(sandbox::NewSessionId(std::string(63, 'a')).size() == sandbox::layout::kMaxSessionIdLength);
}

TEST_CASE("replica ids are DNS labels without '_'", "[unit]") {
  CHECK(sandbox::IsValidReplicaId("r2"));
  CHECK(sandbox::IsValidReplicaId("mcp-sandbox-0"));
  CHECK(sandbox::IsValidReplicaId("a"));
  CHECK_FALSE(sandbox::IsValidReplicaId(""));
  CHECK_FALSE(sandbox::IsValidReplicaId("r_2"));
  CHECK_FALSE(sandbox::IsValidReplicaId("R2"));
  CHECK_FALSE(sandbox::IsValidReplicaId("-r2"));
  CHECK_FALSE(sandbox::IsValidReplicaId("r2-"));
  CHECK_FALSE(sandbox::IsValidReplicaId("r.2"));
  CHECK(sandbox::IsValidReplicaId("mcp-sandbox-12"));
  CHECK(sandbox::IsValidReplicaId(std::string(63, 'a')));  // a DNS label's limit
  CHECK_FALSE(sandbox::IsValidReplicaId(std::string(64, 'a')));
}

TEST_CASE("malformed session ids are refused", "[unit]") {
  const std::string hex32 = "0123456789abcdef0123456789abcdef";
  CHECK_FALSE(sandbox::IsValidSessionId(""));
  CHECK_FALSE(sandbox::IsValidSessionId("sess_"));
  CHECK_FALSE(sandbox::IsValidSessionId("sess_0123456789ABCDEF0123456789ABCDEF"));  // upper case
  CHECK_FALSE(sandbox::IsValidSessionId("sess_" + hex32.substr(1)));                // too short
  CHECK_FALSE(sandbox::IsValidSessionId("sess_" + hex32 + "0"));                    // too long
  CHECK_FALSE(sandbox::IsValidSessionId("sess_0123456789a"));
  CHECK_FALSE(sandbox::IsValidSessionId("sess_../../etc/pas"));
  CHECK_FALSE(sandbox::IsValidSessionId("ses_" + hex32));
  CHECK(sandbox::IsValidSessionId("sess_" + hex32));
  // Ids of the earlier 12-digit form are recognized (a client holding one hears that its
  // session is gone), never made.
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

}  // namespace session_id_test
