// Bounded JSON parsing (the one home for JSON from outside) and the cut quote for errors.
#include "runtime/base/json_parse.h"

#include <string>

#include <catch2/catch.hpp>

#include "runtime/base/json_string_lift.h"
#include "runtime/base/quoted.h"

namespace json_parse_test {

using sandbox::CheckJsonDepth;
using sandbox::ErrorCode;
using sandbox::kMaxJsonDepth;
using sandbox::ParseJsonBounded;
using sandbox::Quoted;

namespace {

std::string Nested(size_t depth, char open, char close, std::string_view inner = "1") {
  std::string text(depth, open);
  text += inner;
  text += std::string(depth, close);
  return text;
}

// {"a":{"a":...{"a":1}...}}
std::string NestedObjects(size_t depth) {
  std::string text;
  for (size_t i = 0; i < depth; ++i) text += "{\"a\":";
  text += "1";
  text += std::string(depth, '}');
  return text;
}

}  // namespace

TEST_CASE("JSON nested up to the bound parses, and one level more is refused", "[unit]") {
  auto ok = ParseJsonBounded(Nested(kMaxJsonDepth, '[', ']'));
  REQUIRE(ok);
  CHECK(ok->is_array());
  auto deep = ParseJsonBounded(Nested(kMaxJsonDepth + 1, '[', ']'));
  REQUIRE_FALSE(deep);
  CHECK(deep.error().code == ErrorCode::kInvalidArgument);
  CHECK(deep.error().message.find("nested deeper than 128") != std::string::npos);
}

TEST_CASE("100 000-deep arrays and objects are refused before parsing", "[unit]") {
  for (const std::string& text : {Nested(100000, '[', ']'), NestedObjects(100000),
                                  std::string(100000, '[') /* unterminated: no better */}) {
    auto parsed = ParseJsonBounded(text);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().message.find("nested deeper") != std::string::npos);
  }
}

TEST_CASE("brackets inside strings, escaped quotes included, do not count", "[unit]") {
  std::string brackets(1000, '[');
  std::string text = "{\"k\":\"" + brackets + "\\\"" + brackets + "\",\"n\":[[1]]}";
  auto parsed = ParseJsonBounded(text, 3);
  REQUIRE(parsed);
  CHECK((*parsed)["k"].get<std::string>().size() == 2001);
  // An escaped backslash ends the escape: the quote after it closes the string.
  CHECK(CheckJsonDepth(R"(["\\",[[[1]]]])", 4));
  CHECK_FALSE(CheckJsonDepth(R"(["\\",[[[1]]]])", 3));
}

TEST_CASE("invalid JSON is an error, never an exception", "[unit]") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "nul", "\"open"}) {
    INFO(bad);
    auto parsed = ParseJsonBounded(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("Quoted keeps short text and cuts long text with its size", "[unit]") {
  CHECK(Quoted("sess_x") == "'sess_x'");
  CHECK(Quoted("a\nb\x7f") == "'a?b?'");
  std::string huge(1 << 20, 'x');
  std::string quoted = Quoted(huge);
  CHECK(quoted.size() < 100);
  CHECK(quoted.find("(1048576 bytes)") != std::string::npos);
  // A cut never splits a UTF-8 sequence: 63 ASCII bytes then a 2-byte letter across the bound.
  std::string text = std::string(63, 'a') + "\xC3\xA9" + "tail";
  std::string cut = Quoted(text, 64);
  CHECK(cut.substr(0, 65) == "'" + std::string(63, 'a') + "\xE2");  // then the ellipsis
  CHECK(cut.find("\xC3") == std::string::npos);
}

namespace {

// A string value long enough to be lifted out of the text (json_string_lift.h), with `inner`
// (raw JSON string content, escapes included) in its middle.
std::string LongRaw(std::string_view inner) {
  std::string filler(sandbox::kLiftedStringBytes, 'A');
  return filler + std::string(inner) + filler;
}

}  // namespace

TEST_CASE("long string values parse exactly as nlohmann parses them", "[unit]") {
  const char* inners[] = {"", R"(\"quoted\" \\ back\/slash)", R"(\n\r\t\b\f)",
                          R"(\u00e9 \u20ac \ud83d\ude00 \u0000)",
                          "raw \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"};
  for (const char* inner : inners) {
    INFO(inner);
    std::string raw = LongRaw(inner);
    // Long values among short ones, in arrays and objects, a long key (never lifted) too:
    // each lifted value must come back in its own place.
    std::string key(sandbox::kLiftedStringBytes + 5, 'k');
    std::string text = R"({"a":"short","b":[")" + raw + R"(",1,"x",{"c":")" + raw + R"("}],")" +
                       key + R"(":")" + raw + R"(","d" : ")" + raw + R"(" , "e":"y"})";
    auto ours = ParseJsonBounded(text);
    REQUIRE(ours);
    CHECK(*ours == nlohmann::json::parse(text));
    // A document that is one long string.
    std::string lone = "\"" + raw + "\"";
    auto single = ParseJsonBounded(lone);
    REQUIRE(single);
    CHECK(*single == nlohmann::json::parse(lone));
  }
}

TEST_CASE("a malformed long string value is refused as nlohmann refuses it", "[unit]") {
  const char* inners[] = {"\x01",     R"(\x)",    R"(\u12G)",     R"(\udc00)",        R"(\ud83d)",
                          "\xc3\x28", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"};
  for (const char* inner : inners) {
    INFO(inner);
    std::string text = "[\"" + LongRaw(inner) + "\"]";
    CHECK_FALSE(nlohmann::json::accept(text));
    auto ours = ParseJsonBounded(text);
    REQUIRE_FALSE(ours);
    CHECK(ours.error().code == ErrorCode::kInvalidArgument);
  }
}

}  // namespace json_parse_test
