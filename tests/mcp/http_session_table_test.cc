// The transport sessions of the HTTP transport without a socket: lookup by id and subject,
// expiry of idle sessions, room made by forgetting the least recently used idle one, and a
// session with a request in flight never forgotten (real Connections of a real Server, with a
// tool that holds its call until released).
#include "mcp/http_session_table.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/tool_result.h"
#include "tests/mcp/capture_reply.h"

namespace http_session_table_test {

using namespace sandbox::mcp;
using sandbox::ErrorCode;
using sandbox::mcp::testing::CaptureReply;
using namespace std::chrono_literals;

namespace {

using Clock = HttpSessionTable::Clock;

// A server with one tool, "hold", that returns once `released` is set.
struct Fixture {
  std::atomic<bool> released{false};
  Server server{ServerOptions{}, HoldTool()};

  std::vector<Tool> HoldTool() {
    std::vector<Tool> tools;
    tools.push_back({"hold", "Hold", "Returns once released.",
                     Json{{"type", "object"}, {"properties", Json::object()}}, nullptr, nullptr,
                     [this](ToolCall&, const Json&) {
                       while (!released) std::this_thread::sleep_for(5ms);
                       ToolResultBuilder result(1 << 10);
                       result.AddText("released");
                       return result.Build();
                     }});
    return tools;
  }
  std::shared_ptr<Connection> Of(const std::string& subject) {
    auto connection = server.NewConnection();
    connection->set_subject(subject);
    return connection;
  }
  // Starts a call that stays in flight on `connection` until released.
  std::shared_ptr<CaptureReply> Busy(const std::shared_ptr<Connection>& connection) {
    auto reply = std::make_shared<CaptureReply>();
    connection->Handle(
        Json::parse(
            R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}})"),
        reply);
    auto deadline = Clock::now() + 10s;
    while (connection->in_flight() == 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    REQUIRE(connection->in_flight() == 1);
    return reply;
  }
  ~Fixture() { released = true; }
};

// A full table of two: "a" kept at t0, "b" a second later.
struct FullTable : Fixture {
  HttpSessionTable table{30min, 2};
  Clock::time_point t0 = Clock::now();
  std::shared_ptr<Connection> a = Of("");
  std::shared_ptr<Connection> b = Of("");
  FullTable() {
    REQUIRE(table.Remember("a", a, t0));
    REQUIRE(table.Remember("b", b, t0 + 1s));
  }
};

}  // namespace

TEST_CASE("http sessions: an id is found for its own subject only, and removed once", "[unit]") {
  Fixture f;
  HttpSessionTable table(30min, 10);
  auto alice = f.Of("alice");
  REQUIRE(table.Remember("a1", alice));
  CHECK(table.Find("a1", "alice") == alice);
  CHECK(table.Find("a1", "bob") == nullptr);  // another subject's id is an unknown one
  CHECK(table.Find("nope", "alice") == nullptr);
  CHECK(table.Remove("a1", "bob") == nullptr);
  CHECK(table.size() == 1);
  CHECK(table.Remove("a1", "alice") == alice);
  CHECK(table.Remove("a1", "alice") == nullptr);
  CHECK(table.size() == 0);
}

TEST_CASE("http sessions: the first connection kept under an id stays", "[unit]") {
  Fixture f;
  HttpSessionTable table(30min, 10);
  auto first = f.Of("");
  auto second = f.Of("");
  REQUIRE(table.Remember("id", first));
  REQUIRE(table.Remember("id", second));  // two first requests of an adopted id at once
  CHECK(table.Find("id", "") == first);
  CHECK(table.All() == std::vector<std::shared_ptr<Connection>>{first});
}

TEST_CASE("http sessions: idle past the TTL is forgotten, unless a request is in flight",
          "[unit]") {
  Fixture f;
  HttpSessionTable table(60s, 10);
  auto t0 = Clock::now();
  auto idle = f.Of("");
  auto busy = f.Of("");
  REQUIRE(table.Remember("idle", idle, t0));
  REQUIRE(table.Remember("busy", busy, t0));
  auto call = f.Busy(busy);
  // Within the TTL, and used again: nothing goes.
  REQUIRE(table.Remember("later", f.Of(""), t0 + 60s));
  CHECK(table.size() == 3);
  CHECK(table.Find("idle", "", t0 + 30s) == idle);
  // Past it: the idle one goes, the busy one stays.
  REQUIRE(table.Remember("last", f.Of(""), t0 + 100s));
  CHECK(table.Find("idle", "") == nullptr);   // last used at t0 + 30 s, 70 s before
  CHECK(table.Find("busy", "") == busy);      // 100 s idle, but its call runs
  CHECK(table.Find("later", "") != nullptr);  // 40 s idle
  f.released = true;
  CHECK(call->WaitClosed());
}

TEST_CASE("http sessions: a full table forgets the least recently used idle session", "[unit]") {
  FullTable f;
  CHECK(f.table.Find("a", "", f.t0 + 2s) == f.a);  // a is now the more recent
  REQUIRE(f.table.Remember("c", f.Of(""), f.t0 + 3s));
  CHECK(f.table.size() == 2);
  CHECK(f.table.Find("b", "") == nullptr);
  CHECK(f.table.Find("a", "") == f.a);
}

TEST_CASE("http sessions: when every kept session is busy a new one is refused", "[unit]") {
  FullTable f;
  auto call_a = f.Busy(f.a);
  // b, though more recent, is the only idle one: it makes the room.
  REQUIRE(f.table.Remember("c", f.Of(""), f.t0 + 2s));
  CHECK(f.table.Find("a", "") == f.a);
  CHECK(f.table.Find("b", "") == nullptr);
  auto c = f.table.Find("c", "");
  REQUIRE(c != nullptr);
  auto call_c = f.Busy(c);
  auto refused = f.table.Remember("d", f.Of(""), f.t0 + 3s);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kMaxSessions);
  CHECK(f.table.size() == 2);
  f.released = true;
  CHECK(call_a->WaitClosed());
  CHECK(call_c->WaitClosed());
}

}  // namespace http_session_table_test
