// JSON-RPC message handling, base64 and argument checks: pure functions.
#include "mcp/jsonrpc.h"

#include <catch2/catch.hpp>

#include "mcp/schema_check.h"

namespace jsonrpc_test {

using namespace sandbox::mcp;

TEST_CASE("serializing never throws on invalid UTF-8 and never emits a newline", "[unit]") {
  Json message = MakeNotification("notifications/message", {{"data", "bad \xFF\n line"}});
  std::string line;
  REQUIRE_NOTHROW(line = Serialize(message));
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\xEF\xBF\xBD") != std::string::npos);
  CHECK(ParseJson(line).has_value());
}

TEST_CASE("messages are classified as requests, notifications and responses", "[unit]") {
  auto request = ClassifyMessage(Json::parse(R"({"jsonrpc":"2.0","id":"a","method":"ping"})"));
  REQUIRE(request);
  CHECK(request->kind == Message::Kind::kRequest);
  CHECK(request->id == "a");
  auto notification =
      ClassifyMessage(Json::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  REQUIRE(notification);
  CHECK(notification->kind == Message::Kind::kNotification);
  auto response = ClassifyMessage(Json::parse(R"({"jsonrpc":"2.0","id":3,"result":{}})"));
  REQUIRE(response);
  CHECK(response->kind == Message::Kind::kResponse);
}

TEST_CASE("malformed messages get -32600 with the id when it can be read", "[unit]") {
  struct Case {
    const char* json;
    Json id;
  };
  const Case cases[] = {
      {R"(5)", nullptr},
      {R"("text")", nullptr},
      {R"({"id":1,"method":"ping"})", 1},  // no jsonrpc
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", 1},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", nullptr},  // null id
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", nullptr},   // fractional id
      {R"({"jsonrpc":"2.0","id":{},"method":"ping"})", nullptr},
      {R"({"jsonrpc":"2.0","id":"x","method":7})", "x"},
      {R"({"jsonrpc":"2.0","id":2,"method":"ping","params":[1]})", 2},
      {R"({"jsonrpc":"2.0","id":2})", 2},
  };
  for (const auto& c : cases) {
    INFO(c.json);
    auto result = ClassifyMessage(Json::parse(c.json));
    REQUIRE_FALSE(result);
    CHECK(result.error()["error"]["code"] == kInvalidRequest);
    CHECK(result.error()["id"] == c.id);
    CHECK(result.error()["jsonrpc"] == "2.0");
  }
}

TEST_CASE("request ids keep their JSON type in keys and responses", "[unit]") {
  CHECK(IdKey(Json("1")) != IdKey(Json(1)));
  Json response = MakeResponse(Json("7"), Json::object());
  CHECK(Serialize(response).find(R"("id":"7")") != std::string::npos);
  Json big = Json::parse("9007199254740993");
  CHECK(Serialize(MakeResponse(big, Json::object())).find("9007199254740993") != std::string::npos);
}

TEST_CASE("not-JSON text is reported as such", "[unit]") {
  CHECK_FALSE(ParseJson("not json").has_value());
  CHECK_FALSE(ParseJson(R"({"a":)").has_value());
  CHECK(ParseJson(R"({"a":1})").has_value());
}

TEST_CASE("a request nested 100 000 deep is a parse error, never a crash", "[unit]") {
  // Before the bound, parsing succeeded and copying params or serialising recursed 100 000
  // frames deep: a stack overflow that took every session down (issue #12).
  for (auto [open, close] : {std::pair{'[', ']'}, std::pair{'{', '}'}}) {
    std::string nested;
    for (size_t i = 0; i < 100000; ++i) nested += open == '[' ? "[" : "{\"a\":";
    nested += "1" + std::string(100000, close);
    std::string request =
        R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":)" + nested + "}}";
    auto parsed = ParseMessageJson(request);
    if (parsed) {
      auto message = ClassifyMessage(*parsed);  // what the transports do next
      CHECK(Serialize(*parsed).size() > 0);
    }
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().find("nested deeper than") != std::string::npos);
    CHECK_FALSE(ParseJson(request).has_value());
  }
  CHECK(ParseMessageJson(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[[[1]]]}})"));
}

TEST_CASE("arguments are checked against a tool's input schema", "[unit]") {
  Json schema = Json::parse(R"({
    "type": "object",
    "properties": {
      "code": {"type": "string", "minLength": 1},
      "timeout_s": {"type": "number", "exclusiveMinimum": 0},
      "count": {"type": "integer", "minimum": 1, "maximum": 5},
      "mode": {"type": "string", "enum": ["a", "b"]},
      "packages": {"type": "array", "items": {"type": "string"}, "minItems": 1}
    },
    "required": ["code"],
    "additionalProperties": false
  })");
  CHECK_FALSE(CheckAgainstSchema(schema, {{"code", "x"}}));
  CHECK_FALSE(CheckAgainstSchema(schema, {{"code", "x"}, {"count", 2.0}}));
  auto expect = [&](const Json& args, const std::string& fragment) {
    auto error = CheckAgainstSchema(schema, args);
    REQUIRE(error);
    INFO(*error);
    CHECK(error->find(fragment) != std::string::npos);
  };
  expect(Json::object(), "'code' is required");
  expect({{"code", 1}}, "'code' must be of type string");
  expect({{"code", ""}}, "'code' must not be empty");
  expect({{"code", "x"}, {"extra", 1}}, "unknown argument 'extra'");
  expect({{"code", "x"}, {"timeout_s", 0}}, "greater than 0");
  expect({{"code", "x"}, {"count", 9}}, "at most 5");
  expect({{"code", "x"}, {"count", 1.5}}, "integer");
  expect({{"code", "x"}, {"mode", "c"}}, "one of");
  expect({{"code", "x"}, {"packages", Json::array()}}, "at least 1");
  expect({{"code", "x"}, {"packages", {"a", 2}}}, "'packages[1]' must be of type string");
}

}  // namespace jsonrpc_test
