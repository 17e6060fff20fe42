// Base64 (RFC 4648): MCP blobs (images, embedded resources, uploads) and the agent wire's byte
// fields. One codec for both, so what one side encodes the other decodes by the same rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox {

std::string Base64Encode(std::string_view bytes);
// Decodes the standard or the URL-safe alphabet, with or without padding; ASCII whitespace
// (MIME line breaks) is skipped. nullopt on any other character or a malformed length.
std::optional<std::string> Base64Decode(std::string_view text);
// The decoded size of `text` without decoding it (an upper bound when whitespace is present).
size_t Base64DecodedSizeBound(std::string_view text);
// The exact decoded size of `text`, checked as Base64Decode checks it, without allocating;
// nullopt when Base64Decode would fail.
std::optional<size_t> Base64DecodedSize(std::string_view text);

// Decodes base64 a piece at a time, so content is never held whole in decoded form next to its
// text (an upload goes to the sandbox chunk by chunk). The text must have passed
// Base64DecodedSize: invalid characters are skipped, not reported.
class Base64Reader {
 public:
  explicit Base64Reader(std::string_view text) : text_(text) {}
  // Appends up to `max` decoded bytes to `out`. False when nothing was left to decode.
  bool Next(size_t max, std::string& out);

 private:
  std::string_view text_;
  size_t position_ = 0;
  uint32_t accumulator_ = 0;
  int bits_ = 0;
};

}  // namespace sandbox
