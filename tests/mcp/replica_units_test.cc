// The socket-free pieces a replica behind a proxy relies on: transport ids and their adoption,
// the /readyz decision, the drain plan, and the public base of download links.
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "mcp/drain.h"
#include "mcp/jsonrpc.h"
#include "mcp/public_url.h"
#include "mcp/readiness.h"
#include "mcp/transport_session_id.h"

namespace replica_units_test {

using namespace sandbox::mcp;
using namespace std::chrono_literals;

TEST_CASE("transport ids name their replica, or are 32 hex digits on a single host", "[unit]") {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string id = NewTransportSessionId("r2");
    REQUIRE(id.rfind("mcps_r2_", 0) == 0);
    REQUIRE(id.size() == 8 + 32);
    REQUIRE(TransportIdReplica(id) == "r2");
    seen.insert(id);
  }
  CHECK(seen.size() == 200);
  std::string single = NewTransportSessionId("");
  CHECK(single.size() == 32);
  CHECK(single.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(TransportIdReplica(single).empty());
  const std::string hex32(32, 'f');
  CHECK(TransportIdReplica("mcps_mcp-sandbox-1_" + hex32) == "mcp-sandbox-1");
  CHECK(TransportIdReplica("mcps_" + std::string(63, 'r') + "_" + hex32) == std::string(63, 'r'));
  CHECK(TransportIdReplica("mcps_" + std::string(64, 'r') + "_" + hex32).empty());
  CHECK(TransportIdReplica("mcps_r2_" + hex32.substr(1)).empty());  // short
  CHECK(TransportIdReplica("mcps_R2_" + hex32).empty());            // not a replica id
  CHECK(TransportIdReplica("mcps_r2_" + std::string(32, 'F')).empty());
  CHECK(TransportIdReplica("sess_r2_" + hex32).empty());  // a session id is no transport id
  CHECK(TransportIdReplica("mcps__" + hex32).empty());
}

TEST_CASE("a replica adopts another replica's well-formed transport id, nothing else", "[unit]") {
  const std::string hex32(32, 'a');
  // Another replica's: adopted, so a 2025 client whose issuer died keeps working.
  CHECK(JudgeUnknownTransportId("mcps_r1_" + hex32, "r2") == UnknownTransportId::kAdopt);
  // Its own prefix but unknown: ended or lost in a restart, 404 as the 2025 transport says.
  CHECK(JudgeUnknownTransportId("mcps_r2_" + hex32, "r2") == UnknownTransportId::kNotFound);
  // Malformed, or a single host's id: 404.
  CHECK(JudgeUnknownTransportId(hex32, "r2") == UnknownTransportId::kNotFound);
  CHECK(JudgeUnknownTransportId("mcps_r1_xyz", "r2") == UnknownTransportId::kNotFound);
  CHECK(JudgeUnknownTransportId("mcps_r1_" + hex32 + "/..", "r2") == UnknownTransportId::kNotFound);
  // A single host adopts nothing: its behaviour stays as it was.
  CHECK(JudgeUnknownTransportId("mcps_r1_" + hex32, "") == UnknownTransportId::kNotFound);
}

TEST_CASE("a replica restarted under its id adopts the transport ids of its earlier run",
          "[unit]") {
  const std::string earlier = NewTransportSessionId("r2", "0badc0de");
  REQUIRE(earlier.size() == 8 + 32);
  CHECK(earlier.substr(8, 8) == "0badc0de");
  CHECK(TransportIdReplica(earlier) == "r2");
  CHECK(NewTransportSessionId("r2", "0badc0de") != earlier);  // 96 random bits after the run
  // This run's own id, unknown (it ended): 404. The earlier run's: adopted.
  CHECK(JudgeUnknownTransportId(earlier, "r2", "0badc0de") == UnknownTransportId::kNotFound);
  CHECK(JudgeUnknownTransportId(earlier, "r2", "1234abcd") == UnknownTransportId::kAdopt);
  // Another replica's, whatever its run: adopted; malformed: 404.
  CHECK(JudgeUnknownTransportId(NewTransportSessionId("r1", "1234abcd"), "r2", "1234abcd") ==
        UnknownTransportId::kAdopt);
  CHECK(JudgeUnknownTransportId("mcps_r2_0badc0de", "r2", "1234abcd") ==
        UnknownTransportId::kNotFound);
}

TEST_CASE("/readyz: 200 ready, 404 draining or full, 503 starting, counts only", "[unit]") {
  ReadinessFacts facts;
  facts.sessions = 3;
  facts.max_sessions = 10;
  facts.replica = "r2";
  Readiness ready = JudgeReadiness(facts);
  CHECK(ready.http_status == 200);
  CHECK(ready.status == "ready");
  auto body = ParseJson(ready.body);
  REQUIRE(body);
  CHECK((*body)["status"] == "ready");
  CHECK((*body)["replica"] == "r2");
  CHECK((*body)["sessions"] == 3);
  CHECK((*body)["max_sessions"] == 10);
  CHECK((*body)["draining"] == false);
  CHECK(body->size() == 5);

  facts.sessions = 10;
  CHECK(JudgeReadiness(facts).http_status == 404);
  CHECK(JudgeReadiness(facts).status == "full");

  facts.sessions = 0;
  facts.starting = true;
  CHECK(JudgeReadiness(facts).http_status == 503);
  CHECK(JudgeReadiness(facts).status == "starting");

  // Draining wins: a draining replica never looks like one about to take sessions.
  facts.draining = true;
  CHECK(JudgeReadiness(facts).http_status == 404);
  CHECK(JudgeReadiness(facts).status == "draining");
  CHECK((*ParseJson(JudgeReadiness(facts).body))["draining"] == true);

  // A single host: no replica in the body.
  CHECK_FALSE(ParseJson(JudgeReadiness(ReadinessFacts{}).body)->contains("replica"));
  CHECK(JudgeReadiness(ReadinessFacts{}).http_status == 200);
}

TEST_CASE("drain plan: off by default, else drain on the first signal and stop on the second",
          "[unit]") {
  auto t0 = DrainPlan::Clock::time_point{} + 1000s;
  DrainPlan off(0ms);
  CHECK(off.OnSignal(t0) == DrainPlan::Step::kStop);
  CHECK_FALSE(off.draining());

  DrainPlan plan(30s);
  CHECK_FALSE(plan.StopReason(0, t0));  // not draining: nothing to decide
  CHECK(plan.OnSignal(t0) == DrainPlan::Step::kDrain);
  CHECK(plan.draining());
  CHECK(plan.deadline() == t0 + 30s);
  CHECK_FALSE(plan.StopReason(2, t0 + 1s));                  // sessions left: wait
  CHECK(*plan.StopReason(0, t0 + 2s) == "no session left");  // the last one went idle
  auto late = plan.StopReason(2, t0 + 30s);                  // the time-out: stop anyway
  REQUIRE(late);
  CHECK(late->find("2 session(s) left") != std::string::npos);
  CHECK(plan.OnSignal(t0 + 3s) == DrainPlan::Step::kStop);  // a second signal
}

TEST_CASE("download links use SANDBOX_PUBLIC_URL, else the request's Host", "[unit]") {
  CHECK(*ParsePublicUrl("") == "");
  CHECK(*ParsePublicUrl("https://Sandbox.Example.com/") == "https://sandbox.example.com");
  CHECK(*ParsePublicUrl("HTTPS://sandbox.example.com:8443/mcp-1/") ==
        "https://sandbox.example.com:8443/mcp-1");
  CHECK(*ParsePublicUrl("http://[::1]:9000") == "http://[::1]:9000");
  CHECK_FALSE(ParsePublicUrl("ftp://x"));
  CHECK_FALSE(ParsePublicUrl("sandbox.example.com"));
  CHECK_FALSE(ParsePublicUrl("https://"));
  CHECK_FALSE(ParsePublicUrl("https://user:pw@host"));
  CHECK_FALSE(ParsePublicUrl("https://host/?a=b"));
  CHECK_FALSE(ParsePublicUrl("https://host/#x"));
  CHECK_FALSE(ParsePublicUrl("https://host/a b"));
  CHECK(PublicUrlHost("https://sandbox.example.com:8443/mcp-1") == "sandbox.example.com:8443");
  CHECK(PublicUrlHost("") == "");

  CHECK(DownloadBaseUrl("https://sandbox.example.com/p", "10.0.0.5:8080", "0.0.0.0:8080") ==
        "https://sandbox.example.com/p");
  CHECK(DownloadBaseUrl("", "127.0.0.1:8080", "127.0.0.1:9") == "http://127.0.0.1:8080");
  CHECK(DownloadBaseUrl("", "", "127.0.0.1:9") == "http://127.0.0.1:9");
}

}  // namespace replica_units_test
