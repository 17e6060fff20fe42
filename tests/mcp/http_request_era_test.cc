// The era of a POST /mcp from its headers and body alone (2026-07-28 basic/versioning.mdx):
// every combination of version header, session id, initialize and per-request _meta.
#include "mcp/http_request_era.h"

#include <catch2/catch.hpp>

#include "mcp/protocol_era.h"

namespace http_request_era_test {

using namespace sandbox::mcp;

namespace {

Json Initialize() {
  return Json::parse(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
}

Json ToolsList() { return Json::parse(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"); }

Json ModernToolsList() {
  Json message = ToolsList();
  message["params"]["_meta"][kMetaProtocolVersion] = "2026-07-28";
  message["params"]["_meta"][kMetaClientCapabilities] = Json::object();
  return message;
}

}  // namespace

TEST_CASE("http era: a modern version header makes a stateless request, session or not", "[unit]") {
  CHECK(DecidePostEra("2026-07-28", "", ModernToolsList()) == HttpPostEra::kModern);
  CHECK(DecidePostEra("2026-07-28", "", ToolsList()) == HttpPostEra::kModern);
  // A session id that comes along is ignored.
  CHECK(DecidePostEra("2026-07-28", "abc", ToolsList()) == HttpPostEra::kModern);
  CHECK(DecidePostEra("2026-07-28", "", Initialize()) == HttpPostEra::kModern);
}

TEST_CASE("http era: without a session, _meta or an unknown revision is modern", "[unit]") {
  CHECK(DecidePostEra("", "", ModernToolsList()) == HttpPostEra::kModern);
  CHECK(DecidePostEra("2025-11-25", "", ModernToolsList()) == HttpPostEra::kModern);
  // A revision this server does not know: the modern errors answer it.
  CHECK(DecidePostEra("2099-01-01", "", ToolsList()) == HttpPostEra::kModern);
  CHECK(DecidePostEra("2099-01-01", "", Initialize()) == HttpPostEra::kModern);
  // Not an object at all (a batch): still judged, as modern when nothing says legacy.
  CHECK(DecidePostEra("2099-01-01", "", Json::array()) == HttpPostEra::kModern);
}

TEST_CASE("http era: a session id or an initialize is legacy, anything else has no session",
          "[unit]") {
  for (const char* header : {"", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    CAPTURE(header);
    CHECK(DecidePostEra(header, "", Initialize()) == HttpPostEra::kOpenSession);
    CHECK(DecidePostEra(header, "abc", ToolsList()) == HttpPostEra::kInSession);
    // _meta in a session's request does not take it out of the session.
    CHECK(DecidePostEra(header, "abc", ModernToolsList()) == HttpPostEra::kInSession);
    CHECK(DecidePostEra(header, "", ToolsList()) == HttpPostEra::kSessionless);
  }
  // An unknown revision with a session stays in the session (whose check refuses it).
  CHECK(DecidePostEra("2099-01-01", "abc", ToolsList()) == HttpPostEra::kInSession);
  // A notification named initialize (no id) opens nothing.
  CHECK(DecidePostEra("", "", Json::parse(R"({"jsonrpc":"2.0","method":"initialize"})")) ==
        HttpPostEra::kSessionless);
}

TEST_CASE("http era: initialize requests, and the revision a legacy header names", "[unit]") {
  CHECK(IsInitializeRequest(Initialize()));
  CHECK_FALSE(IsInitializeRequest(ToolsList()));
  CHECK_FALSE(IsInitializeRequest(Json::parse(R"({"jsonrpc":"2.0","method":"initialize"})")));
  CHECK_FALSE(IsInitializeRequest(Json::array({Initialize()})));
  CHECK(LegacyHeaderVersion("") == "2025-03-26");
  CHECK(LegacyHeaderVersion("2025-06-18") == "2025-06-18");
  CHECK(LegacyHeaderVersion("bogus") == "bogus");  // the caller refuses it
}

}  // namespace http_request_era_test
