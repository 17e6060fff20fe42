// The one base64 codec: MCP blobs and the agent wire's byte fields.
#include "runtime/base/base64.h"

#include <string>

#include <catch2/catch.hpp>

namespace sandbox::base64_test {
namespace {

TEST_CASE("base64 round-trips every length and every byte, and rejects junk", "[unit]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t len = 0; len <= all.size(); ++len) {
    std::string bytes = all.substr(0, len);
    auto decoded = Base64Decode(Base64Encode(bytes));
    REQUIRE(decoded);
    CHECK(*decoded == bytes);
  }
  CHECK(Base64Encode("foobar") == "Zm9vYmFy");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK(Base64Encode("f") == "Zg==");
  CHECK(*Base64Decode("Zm8=") == "fo");
  for (std::string bad : {"Zm=8", "====", "Z!8=", "Zg==Zg=="}) {
    INFO(bad);
    CHECK_FALSE(Base64Decode(bad));
  }
}

TEST_CASE("base64 round-trips and rejects what is not base64", "[unit]") {
  for (std::string text : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    CHECK(Base64Decode(Base64Encode(text)) == text);
  }
  CHECK(Base64Encode("foobar") == "Zm9vYmFy");
  CHECK(Base64Decode("Zm9v\nYmE=") == std::string("fooba"));
  CHECK(Base64Decode("Zm9vYmE") == std::string("fooba"));  // padding optional
  CHECK(Base64Decode("-_8") == std::string("\xfb\xff"));   // URL-safe alphabet
  CHECK_FALSE(Base64Decode("Zm9v!").has_value());
  CHECK_FALSE(Base64Decode("Z").has_value());
  CHECK_FALSE(Base64Decode("Zm==Zm").has_value());
  std::string binary(256, '\0');
  for (int i = 0; i < 256; ++i) binary[static_cast<size_t>(i)] = static_cast<char>(i);
  CHECK(Base64Decode(Base64Encode(binary)) == binary);
}

TEST_CASE("base64 decodes piece by piece to what a whole decode gives", "[unit]") {
  std::string binary;
  for (int i = 0; i < 1000; ++i) binary += static_cast<char>(i * 7 % 256);
  std::string text = Base64Encode(binary);
  text.insert(76, "\r\n");  // MIME line breaks are skipped in both
  REQUIRE(Base64DecodedSize(text) == binary.size());
  for (size_t piece : {1, 2, 3, 7, 64, 4096}) {
    Base64Reader reader(text);
    std::string out;
    size_t pieces = 0;
    while (reader.Next(piece, out)) ++pieces;
    CHECK(out == binary);
    CHECK(pieces == (binary.size() + piece - 1) / piece);
  }
  CHECK(Base64DecodedSize("Zm9vYmE") == 5u);
  CHECK(Base64DecodedSize("Zm9vYmE=") == 5u);
  CHECK(Base64DecodedSize("") == 0u);
  CHECK_FALSE(Base64DecodedSize("Zm9v!").has_value());
  CHECK_FALSE(Base64DecodedSize("Z").has_value());
  CHECK_FALSE(Base64DecodedSize("Zm==Zm").has_value());
}

}  // namespace
}  // namespace sandbox::base64_test
