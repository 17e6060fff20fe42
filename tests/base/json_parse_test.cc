// Bounded JSON parsing (the one home for JSON from outside) and the cut quote for errors.
#include "runtime/base/json_parse.h"

#include <string>

#include <catch2/catch.hpp>

#include "runtime/base/quoted.h"

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

TEST_CASE("JSON nested up to the bound parses; one level more is refused", "[unit]") {
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
