// UTF-8: the one decoder, the repair and the cuts (runtime/base/utf8.h): pure functions.
#include "runtime/base/utf8.h"

#include <catch2/catch.hpp>

#include "runtime/base/quoted.h"

namespace utf8_test {

using namespace sandbox;

TEST_CASE("a sequence is measured, or its maximal invalid subpart is", "[unit]") {
  CHECK(Utf8SequenceAt("a", 0) == 1);
  CHECK(Utf8SequenceAt("\xC3\xA9", 0) == 2);
  CHECK(Utf8SequenceAt("\xE2\x82\xAC", 0) == 3);
  CHECK(Utf8SequenceAt("\xF0\x9F\x98\x80", 0) == 4);
  CHECK(Utf8SequenceAt("\xE2\x82", 0) == -2);          // cut at the end: one subpart of two bytes
  CHECK(Utf8SequenceAt("\xE2\x82x", 0) == -2);         // cut before a plain byte
  CHECK(Utf8SequenceAt("\xC0\xAF", 0) == -1);          // overlong lead: never valid
  CHECK(Utf8SequenceAt("\xED\xA0\x80", 0) == -1);      // a surrogate
  CHECK(Utf8SequenceAt("\xF4\x90\x80\x80", 0) == -1);  // past U+10FFFF
  CHECK(Utf8SequenceAt("\xFF", 0) == -1);
  CHECK(Utf8SequenceAt("x\xC3\xA9", 1) == 2);
}

TEST_CASE("invalid UTF-8 is replaced with U+FFFD per maximal subpart", "[unit]") {
  CHECK(ValidUtf8("plain ascii") == "plain ascii");
  CHECK(ValidUtf8("h\xC3\xA9llo") == "h\xC3\xA9llo");          // valid 2-byte
  CHECK(ValidUtf8("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");  // valid 4-byte
  CHECK(ValidUtf8("a\xFF"
                  "b") ==
        "a\xEF\xBF\xBD"
        "b");                                    // never-valid byte
  CHECK(ValidUtf8("a\xC3") == "a\xEF\xBF\xBD");  // truncated at the end
  CHECK(ValidUtf8("\xE2\x82"
                  "x") ==
        "\xEF\xBF\xBD"
        "x");  // one U+FFFD for the subpart
  CHECK(ValidUtf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  CHECK(ValidUtf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
  CHECK(ValidUtf8(std::string("nul\0ok", 6)) == std::string("nul\0ok", 6));
}

TEST_CASE("UTF-8 prefixes and suffixes never split a character", "[unit]") {
  std::string text = "ab\xC3\xA9\xE2\x82\xAC";  // a b é €
  CHECK(Utf8Prefix(text, 3) == "ab");
  CHECK(Utf8Prefix(text, 4) == "ab\xC3\xA9");
  CHECK(Utf8Prefix(text, 100) == text);
  CHECK(Utf8Suffix(text, 2) == "");
  CHECK(Utf8Suffix(text, 3) == "\xE2\x82\xAC");
  CHECK(Utf8Suffix(text, 4) == "\xE2\x82\xAC");
  CHECK(Utf8Suffix(text, 5) == "\xC3\xA9\xE2\x82\xAC");
}

TEST_CASE("a quote keeps valid UTF-8 and marks every invalid byte", "[unit]") {
  CHECK(Quoted("h\xC3\xA9") == "'h\xC3\xA9'");
  CHECK(Quoted("a\xFF\xE2\x82") ==
        "'a"
        "???"
        "'");
  CHECK(Quoted("ab\xC3\xA9", 3) == "'ab…' (4 bytes)");
}

}  // namespace utf8_test
