#include "runtime/session/session_id.h"

#include <set>

#include <catch2/catch.hpp>

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
