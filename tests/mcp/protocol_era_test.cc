// Revision 2026-07-28 beside the 2025 ones: per-request _meta in the dispatcher, the HTTP
// request headers, stateless HTTP requests (status codes, cancellation by closing the stream),
// and the JSON Schema 2020-12 keywords tool schemas may use.
#include "mcp/protocol_era.h"

#include <httplib.h>
#include <strings.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/http_request_headers.h"
#include "mcp/http_transport.h"
#include "mcp/schema_check.h"
#include "mcp/server.h"
#include "mcp/tool_result.h"
#include "tests/mcp/capture_reply.h"

namespace protocol_era_test {

using namespace sandbox::mcp;
using sandbox::mcp::testing::CaptureReply;
using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_slow_cancelled{false};

std::vector<Tool> EraTools() {
  std::vector<Tool> tools;
  Tool echo;
  echo.name = "echo";
  echo.description = "Returns its text; logs at info first.";
  echo.input_schema = {{"type", "object"},
                       {"properties",
                        {{"text", {{"type", "string"}}},
                         {"session_id", {{"type", "string"}, {"x-mcp-header", "Session-Id"}}}}},
                       {"additionalProperties", false}};
  echo.handler = [](ToolCall& call, const Json& args) {
    call.Log(LogLevel::kInfo, "echoing");
    ToolResultBuilder result(1 << 20);
    result.AddText(args.value("text", ""));
    return result.Build();
  };
  tools.push_back(echo);
  Tool sampler = echo;
  sampler.name = "needs_sampling";
  sampler.required_client_capabilities = {{"sampling", Json::object()}};
  tools.push_back(sampler);
  Tool slow;
  slow.name = "slow";
  slow.description = "Waits until cancelled (10 s at most).";
  slow.input_schema = {{"type", "object"}};
  slow.handler = [](ToolCall& call, const Json&) {
    std::atomic<bool> stop{false};
    auto guard = call.OnCancel([&] { stop = true; });
    for (int i = 0; i < 500 && !stop; ++i) std::this_thread::sleep_for(20ms);
    g_slow_cancelled = stop.load();
    ToolResultBuilder result(1 << 20);
    result.AddText(stop ? "stopped" : "done");
    return result.Build();
  };
  tools.push_back(slow);
  return tools;
}

Json Meta(std::string version = "2026-07-28", Json extra = Json::object()) {
  Json meta = {{kMetaProtocolVersion, version},
               {kMetaClientCapabilities, Json::object()},
               {kMetaClientInfo, {{"name", "t"}, {"version", "1"}}}};
  for (auto& [key, value] : extra.items()) meta[key] = value;
  return meta;
}

Json Request(const std::string& method, Json params, Json id = 1) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

Json Exchange(Connection& connection, Json message) {
  auto reply = std::make_shared<CaptureReply>();
  connection.Handle(std::move(message), reply);
  REQUIRE(reply->WaitClosed());
  return reply->response();
}

}  // namespace

TEST_CASE("modern requests are served without initialize, by their _meta", "[unit][mcp][era]") {
  Server server(ServerOptions{}, EraTools());
  auto connection = server.NewConnection();

  SECTION("server/discover names the modern revisions and identifies the server") {
    Json r = Exchange(*connection, Request("server/discover", {{"_meta", Meta()}}));
    REQUIRE(r.contains("result"));
    CHECK(r["result"]["supportedVersions"] == Json::array({"2026-07-28"}));
    CHECK(r["result"]["capabilities"]["tools"].is_object());
    CHECK(r["result"]["resultType"] == "complete");
    CHECK(r["result"]["_meta"][kMetaServerInfo]["name"] == "mcp-sandbox");
    CHECK(r["result"]["ttlMs"].is_number_integer());
  }
  SECTION("missing _meta fields are invalid params") {
    Json r = Exchange(*connection, Request("server/discover", Json::object()));
    CHECK(r["error"]["code"] == kInvalidParams);
    Json meta = Meta();
    meta.erase(kMetaClientCapabilities);
    r = Exchange(*connection, Request("tools/list", {{"_meta", meta}}, "x"));
    CHECK(r["error"]["code"] == kInvalidParams);
    CHECK(r["id"] == "x");
  }
  SECTION("an unknown revision gets UnsupportedProtocolVersion with the supported list") {
    Json r = Exchange(*connection, Request("tools/list", {{"_meta", Meta("v999")}}));
    CHECK(r["error"]["code"] == kUnsupportedProtocolVersion);
    CHECK(r["error"]["data"]["supported"] == Json::array({"2026-07-28"}));
    CHECK(r["error"]["data"]["requested"] == "v999");
    CHECK(ModernHttpStatus(r) == 400);
  }
  SECTION("removed methods are not found; tools/list carries cache hints in a stable order") {
    for (const char* method : {"initialize", "ping", "logging/setLevel", "resources/subscribe"}) {
      Json r = Exchange(*connection, Request(method, {{"_meta", Meta()}}));
      CHECK(r["error"]["code"] == kMethodNotFound);
      CHECK(ModernHttpStatus(r) == 404);
    }
    Json first = Exchange(*connection, Request("tools/list", {{"_meta", Meta()}}));
    Json second = Exchange(*connection, Request("tools/list", {{"_meta", Meta()}}));
    CHECK(first == second);
    CHECK(first["result"]["cacheScope"] == "public");
    CHECK(first["result"]["ttlMs"].get<int64_t>() > 0);
    CHECK(first["result"]["tools"][0]["name"] == "echo");
  }
  SECTION("log messages only with a logLevel in _meta") {
    auto quiet = std::make_shared<CaptureReply>();
    connection->Handle(
        Request("tools/call",
                {{"name", "echo"}, {"arguments", {{"text", "a"}}}, {"_meta", Meta()}}),
        quiet);
    REQUIRE(quiet->WaitClosed());
    CHECK(quiet->messages().size() == 1);
    CHECK(quiet->response()["result"]["resultType"] == "complete");
    auto loud = std::make_shared<CaptureReply>();
    connection->Handle(
        Request("tools/call", {{"name", "echo"},
                               {"arguments", {{"text", "a"}}},
                               {"_meta", Meta("2026-07-28", {{kMetaLogLevel, "info"}})}}),
        loud);
    REQUIRE(loud->WaitClosed());
    REQUIRE(loud->messages().size() == 2);
    CHECK(loud->messages()[0]["method"] == "notifications/message");
  }
  SECTION("a tool that needs an undeclared client capability is refused with -32021") {
    Json r = Exchange(*connection,
                      Request("tools/call", {{"name", "needs_sampling"}, {"_meta", Meta()}}));
    CHECK(r["error"]["code"] == kMissingRequiredClientCapability);
    CHECK(r["error"]["data"]["requiredCapabilities"] == Json{{"sampling", Json::object()}});
    r = Exchange(
        *connection,
        Request("tools/call", {{"name", "needs_sampling"},
                               {"_meta", Meta("2026-07-28", {{kMetaClientCapabilities,
                                                              {{"sampling", Json::object()}}}})}}));
    CHECK(r.contains("result"));
  }
  SECTION("the legacy era on the same connection is unchanged") {
    Json init = Exchange(*connection, Request("initialize", {{"protocolVersion", "2025-11-25"},
                                                             {"capabilities", Json::object()}}));
    CHECK(init["result"]["protocolVersion"] == "2025-11-25");
    Json list = Exchange(*connection, Request("tools/list", Json::object()));
    CHECK_FALSE(list["result"].contains("resultType"));
    CHECK_FALSE(list["result"].contains("ttlMs"));
    Json ping = Exchange(*connection, Request("ping", Json::object()));
    CHECK(ping["result"] == Json::object());
  }
}

TEST_CASE("notifications/cancelled stops a modern call on stdio", "[unit][mcp][era]") {
  Server server(ServerOptions{}, EraTools());
  auto connection = server.NewConnection();
  g_slow_cancelled = false;
  auto reply = std::make_shared<CaptureReply>();
  connection->Handle(Request("tools/call", {{"name", "slow"}, {"_meta", Meta()}}, 7), reply);
  std::this_thread::sleep_for(100ms);
  connection->Handle(Json{{"jsonrpc", "2.0"},
                          {"method", "notifications/cancelled"},
                          {"params", {{"requestId", 7}}}},
                     std::make_shared<CaptureReply>());
  REQUIRE(reply->WaitClosed(5s));
  CHECK(reply->response().is_null());  // a cancelled request gets no answer
  CHECK(g_slow_cancelled);
}

TEST_CASE("HTTP request headers must say what the body says", "[unit][mcp][era]") {
  Json schema = EraTools()[0].input_schema;
  Json call = Request(
      "tools/call",
      {{"name", "echo"}, {"arguments", {{"session_id", "sess_0123456789ab"}}}, {"_meta", Meta()}});
  HttpRequestHead head;
  head.fields = {{"MCP-Protocol-Version", "2026-07-28"},
                 {"mcp-method", "tools/call"},
                 {"Mcp-Name", "  echo "},
                 {"Mcp-Param-Session-Id", "sess_0123456789ab"}};
  CHECK_FALSE(CheckRequestHeaders(head, call, schema));
  auto with = [&](const char* name, const char* value) {
    HttpRequestHead changed = head;
    for (auto& field : changed.fields) {
      if (strcasecmp(field.name.c_str(), name) == 0) {
        field.value = value;
      }
    }
    return CheckRequestHeaders(changed, call, schema);
  };
  CHECK(with("Mcp-Method", "TOOLS/CALL"));
  CHECK(with("Mcp-Name", "other"));
  CHECK(with("MCP-Protocol-Version", "2025-11-25"));
  CHECK(with("Mcp-Param-Session-Id", "sess_ffffffffffff"));
  CHECK_FALSE(with("Mcp-Param-Session-Id", "=?base64?c2Vzc18wMTIzNDU2Nzg5YWI=?="));
  CHECK(with("Mcp-Param-Session-Id", "=?base64?c2Vzc18wMTIzNDU2Nzg5YWI?="));  // no padding
  CHECK(with("Mcp-Param-Session-Id", "=?base64?c2Vz!!!c18wMTIzNDU2Nzg5YWI=?="));
  HttpRequestHead missing = head;
  missing.fields.pop_back();  // the body has session_id, the header does not
  CHECK(CheckRequestHeaders(missing, call, schema));
  missing.fields.erase(missing.fields.begin() + 1);  // no Mcp-Method
  CHECK(CheckRequestHeaders(missing, call, schema));
  CHECK(DecodeMcpHeaderValue("=?base64?SGVsbG8=?=") == "Hello");
  CHECK(DecodeMcpHeaderValue("=?base64?SGVsbG8=") == "=?base64?SGVsbG8=");  // literal
  CHECK_FALSE(DecodeMcpHeaderValue("a\x01"));
}

TEST_CASE("JSON Schema 2020-12: $ref, $anchor, allOf/anyOf, if/then/else, const",
          "[unit][mcp][era]") {
  Json schema = Json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"$anchor": "addr", "type": "object",
              "properties": {"city": {"type": "string"}}, "additionalProperties": false}},
    "properties": {"address": {"$ref": "#/$defs/address"}, "home": {"$ref": "#addr"},
                   "contactMethod": {"enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]}, "else": {"required": ["email"]},
    "additionalProperties": false})");
  CHECK_FALSE(CheckAgainstSchema(schema, {{"email", "a@b"}}));
  CHECK_FALSE(CheckAgainstSchema(schema, {{"contactMethod", "phone"}, {"phone", "1"}}));
  CHECK(CheckAgainstSchema(schema, Json::object()));                                // anyOf
  CHECK(CheckAgainstSchema(schema, {{"contactMethod", "phone"}, {"email", "a"}}));  // then
  CHECK(CheckAgainstSchema(schema, {{"email", "a"}, {"address", {{"city", 3}}}}));  // $ref
  CHECK(CheckAgainstSchema(schema, {{"email", "a"}, {"home", {{"zip", "1"}}}}));    // $anchor
  Json cycle = {{"$defs", {{"a", {{"$ref", "#/$defs/a"}}}}}, {"$ref", "#/$defs/a"}};
  CHECK_FALSE(CheckAgainstSchema(cycle, 1));  // a cycle ends, it does not recurse forever
}

TEST_CASE("stateless HTTP requests: status codes, headers, cancel by closing", "[unit][mcp][era]") {
  Server server(ServerOptions{}, EraTools());
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  HttpTransport transport(server, options);
  REQUIRE(transport.Bind());
  sandbox::Status served;
  std::thread serving([&] { served = transport.Serve(); });
  httplib::Client client("127.0.0.1", transport.port());
  client.set_read_timeout(10, 0);
  auto post = [&](const Json& body, httplib::Headers extra = {}) {
    httplib::Headers headers = {{"Accept", "application/json, text/event-stream"},
                                {"MCP-Protocol-Version", "2026-07-28"},
                                {"Mcp-Method", body.value("method", "")}};
    for (auto& [k, v] : extra) {
      headers.erase(k);
      headers.emplace(k, v);
    }
    return client.Post("/mcp", headers, body.dump(), "application/json");
  };

  auto ok = post(Request("tools/list", {{"_meta", Meta()}}));
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(ok->get_header_value("Mcp-Session-Id").empty());
  CHECK(Json::parse(ok->body)["result"]["cacheScope"] == "public");

  auto no_meta = post(Request("server/discover", Json::object(), 101));
  REQUIRE(no_meta);
  CHECK(no_meta->status == 400);
  CHECK(Json::parse(no_meta->body)["error"]["code"] == kInvalidParams);
  CHECK(Json::parse(no_meta->body)["id"] == 101);

  auto mismatch = post(Request("server/discover", {{"_meta", Meta("v999")}}));
  REQUIRE(mismatch);
  CHECK(mismatch->status == 400);
  CHECK(Json::parse(mismatch->body)["error"]["code"] == kHeaderMismatch);

  auto unsupported = post(Request("server/discover", {{"_meta", Meta("v999")}}),
                          {{"MCP-Protocol-Version", "v999"}});
  REQUIRE(unsupported);
  CHECK(unsupported->status == 400);
  CHECK(Json::parse(unsupported->body)["error"]["code"] == kUnsupportedProtocolVersion);

  auto removed = post(Request("ping", {{"_meta", Meta()}}));
  REQUIRE(removed);
  CHECK(removed->status == 404);

  auto no_name = post(Request("tools/call", {{"name", "echo"}, {"_meta", Meta()}}));
  REQUIRE(no_name);
  CHECK(no_name->status == 400);
  CHECK(Json::parse(no_name->body)["error"]["code"] == kHeaderMismatch);

  // The legacy era still works on the same endpoint.
  auto init = client.Post(
      "/mcp", {{"Accept", "application/json, text/event-stream"}},
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})",
      "application/json");
  REQUIRE(init);
  CHECK(init->status == 200);
  CHECK_FALSE(init->get_header_value("Mcp-Session-Id").empty());

  // Closing the response stream cancels the call.
  g_slow_cancelled = false;
  {
    httplib::Client quitter("127.0.0.1", transport.port());
    quitter.set_read_timeout(0, 300000);  // gives up after 0.3 s: closes the connection
    auto res = quitter.Post("/mcp",
                            {{"Accept", "application/json, text/event-stream"},
                             {"MCP-Protocol-Version", "2026-07-28"},
                             {"Mcp-Method", "tools/call"},
                             {"Mcp-Name", "slow"}},
                            Request("tools/call", {{"name", "slow"}, {"_meta", Meta()}}).dump(),
                            "application/json");
    CHECK_FALSE(res);
  }
  for (int i = 0; i < 100 && !g_slow_cancelled; ++i) std::this_thread::sleep_for(20ms);
  CHECK(g_slow_cancelled);

  transport.Stop();
  serving.join();
  CHECK(served);
}

}  // namespace protocol_era_test
