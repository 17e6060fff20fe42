// Issue #36 defect 8: two copies of a routing header give two answers (the server reads the
// first, HAProxy's req.hdr() the last), so a call could be routed by one session and run against
// another. Any repetition of MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-* or
// Mcp-Session-Id (also as one comma-separated value, but in Mcp-Name) is refused with 400 from
// the head alone, equal values too, before a tool runs.
#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/http_admission.h"
#include "mcp/http_request_headers.h"
#include "mcp/http_transport.h"
#include "mcp/jsonrpc.h"
#include "mcp/protocol_era.h"
#include "mcp/tool_result.h"
#include "tests/mcp/raw_http.h"

namespace http_repeated_headers_test {

using namespace sandbox::mcp;
using sandbox::mcp::testing::RawExchange;

namespace {

std::atomic<int> g_calls{0};

// A tool whose session_id is mirrored into Mcp-Param-Session-Id, as every sandbox tool's is.
std::vector<Tool> CountingTool() {
  Tool tool;
  tool.name = "run";
  tool.description = "Counts its calls.";
  tool.input_schema = {
      {"type", "object"},
      {"properties", {{"session_id", {{"type", "string"}, {"x-mcp-header", "Session-Id"}}}}}};
  tool.handler = [](ToolCall&, const Json&) {
    ++g_calls;
    ToolResultBuilder result(1 << 20);
    result.AddText("ran");
    return result.Build();
  };
  return {tool};
}

HttpRequestHead Head(std::vector<HttpField> fields) {
  HttpRequestHead head;
  head.method = "POST";
  head.target = "/mcp";
  head.fields = {{"Host", "127.0.0.1:8080"},
                 {"Accept", "application/json, text/event-stream"},
                 {"Content-Type", "application/json"}};
  for (auto& field : fields) head.fields.push_back(std::move(field));
  head.content_length = 10;
  return head;
}

}  // namespace

TEST_CASE("routing headers: a repeated one is named, equal values or not", "[unit]") {
  CHECK_FALSE(RepeatedRoutingHeader(Head({{"Mcp-Param-Session-Id", "sess_a"},
                                          {"Mcp-Param-Other", "sess_a"},
                                          {"Mcp-Method", "tools/call"},
                                          {"Mcp-Name", "run"},
                                          {"MCP-Protocol-Version", "2026-07-28"},
                                          {"Accept", "text/plain"}})));  // not a routing header
  for (auto [first, second] : std::vector<std::pair<HttpField, HttpField>>{
           {{"Mcp-Param-Session-Id", "sess_a"}, {"Mcp-Param-Session-Id", "sess_b"}},
           {{"Mcp-Param-Session-Id", "sess_a"}, {"mcp-param-session-id", "sess_a"}},
           {{"Mcp-Name", "run"}, {"MCP-NAME", "other"}},
           {{"Mcp-Method", "tools/call"}, {"Mcp-Method", "tools/call"}},
           {{"MCP-Protocol-Version", "2026-07-28"}, {"mcp-protocol-version", "2025-11-25"}},
           {{"Mcp-Session-Id", "mcps_a_1"}, {"Mcp-Session-Id", "mcps_b_1"}}}) {
    INFO(first.name << " then " << second.name);
    auto repeated = RepeatedRoutingHeader(Head({first, {"X-Between", "1"}, second}));
    REQUIRE(repeated);
    CHECK(*repeated == second.name);

    HttpVerdict verdict = HttpAdmission(HttpAdmissionPolicy{}).Judge(Head({first, second}));
    CHECK_FALSE(verdict.admit);
    CHECK(verdict.response.status == 400);
    CHECK_THAT(verdict.response.body, Catch::Contains("more than once"));
    CHECK(Json::parse(verdict.response.body)["error"]["code"] == kHeaderMismatch);
  }
  // A client without a token is told so first: the repetition is not worth an answer to it.
  HttpAdmissionPolicy guarded;
  guarded.auth_tokens = {"tok"};
  HttpVerdict unauthenticated = HttpAdmission(guarded).Judge(
      Head({{"Mcp-Method", "tools/call"}, {"Mcp-Method", "tools/call"}}));
  CHECK(unauthenticated.response.status == 401);
}

// Two values folded into one field ("a, b", RFC 9110 §5.3) are the same message as the field
// twice, and HAProxy's req.hdr() reads the last of them: refused alike. Not in Mcp-Name, whose
// resource URI may hold a comma (the router reads that header whole).
TEST_CASE("routing headers: a comma-separated value is a repetition, except in Mcp-Name",
          "[unit]") {
  for (const HttpField& field :
       std::vector<HttpField>{{"Mcp-Param-Session-Id", "sess_a, sess_b"},
                              {"Mcp-Param-Session-Id", "sess_a,sess_b"},
                              {"Mcp-Param-Session-Id", "sess_a,"},
                              {"Mcp-Session-Id", "mcps_a_1, mcps_b_1"},
                              {"MCP-Protocol-Version", "2025-11-25, 2026-07-28"},
                              {"Mcp-Method", "tools/call,tools/list"}}) {
    INFO(field.name << ": " << field.value);
    auto repeated = RepeatedRoutingHeader(Head({field}));
    REQUIRE(repeated);
    CHECK(*repeated == field.name);
    HttpVerdict verdict = HttpAdmission(HttpAdmissionPolicy{}).Judge(Head({field}));
    CHECK(verdict.response.status == 400);
    CHECK_THAT(verdict.response.body, Catch::Contains("comma-separated"));
  }
  CHECK_FALSE(
      RepeatedRoutingHeader(Head({{"Mcp-Name", "sandbox://sessions/sess_a/files/a,b.csv"}})));
  CHECK_FALSE(RepeatedRoutingHeader(Head({{"Accept", "application/json, text/event-stream"}})));
}

TEST_CASE("routing headers: two Mcp-Param-Session-Id are refused before the tool runs", "[unit]") {
  Server server(ServerOptions{}, CountingTool());
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  HttpTransport transport(server, options);
  REQUIRE(transport.Bind());
  sandbox::Status served;
  std::thread serving([&] { served = transport.Serve(); });

  Json call = {{"jsonrpc", "2.0"},
               {"id", 7},
               {"method", "tools/call"},
               {"params",
                {{"name", "run"},
                 {"arguments", {{"session_id", "sess_a"}}},
                 {"_meta",
                  {{kMetaProtocolVersion, "2026-07-28"},
                   {kMetaClientCapabilities, Json::object()},
                   {kMetaClientInfo, {{"name", "t"}, {"version", "1"}}}}}}}};
  std::string body = call.dump();
  auto post = [&](std::string_view routing) {
    return RawExchange(
        transport.port(),
        fmt::format("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    "Content-Type: application/json\r\nContent-Length: {}\r\n{}\r\n{}",
                    body.size(), routing, body));
  };
  const std::string common =
      "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: run\r\n";

  g_calls = 0;
  for (const char* twice :
       {"Mcp-Param-Session-Id: sess_a\r\nMcp-Param-Session-Id: sess_b\r\n",  // first = body
        "Mcp-Param-Session-Id: sess_b\r\nMcp-Param-Session-Id: sess_a\r\n",  // last = body
        "Mcp-Param-Session-Id: sess_a\r\nMcp-Param-Session-Id: sess_a\r\n",
        "Mcp-Param-Session-Id: sess_a, sess_b\r\n",  // folded by a proxy
        "Mcp-Param-Session-Id: sess_b,sess_a\r\n"}) {
    INFO(twice);
    std::string answer = post(common + twice);
    CHECK(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK_THAT(answer, Catch::Contains("Mcp-Param-Session-Id"));
    CHECK_THAT(answer, Catch::Contains("more than once"));
  }
  std::string name_twice = post(
      "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: run\r\n"
      "Mcp-Name: run\r\nMcp-Param-Session-Id: sess_a\r\n");
  CHECK(name_twice.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  CHECK(g_calls == 0);

  // Once each: the call runs.
  std::string once = post(common + "Mcp-Param-Session-Id: sess_a\r\n");
  CHECK(once.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(g_calls == 1);

  transport.Stop();
  serving.join();
  CHECK(served);
}

}  // namespace http_repeated_headers_test
