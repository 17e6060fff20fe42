#include "runtime/base/quoted.h"

#include <fmt/format.h>

namespace sandbox {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string Quoted(std::string_view text, size_t max_bytes) {
  std::string_view kept = text;
  if (kept.size() > max_bytes) {
    size_t end = max_bytes;
    // Step back over continuation bytes so the cut falls before a lead byte.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    kept = text.substr(0, end);
  }
  std::string out = "'";
  out.reserve(kept.size() + 24);
  for (size_t i = 0; i < kept.size();) {
    auto u = static_cast<unsigned char>(kept[i]);
    if (u >= 0x80) {
      size_t length = Utf8SequenceLength(kept.substr(i));
      if (length == 0) {
        out += '?';
        ++i;
      } else {
        out.append(kept.substr(i, length));
        i += length;
      }
      continue;
    }
    bool unsafe = u < 0x20 || u == 0x7F || u == '"' || u == '\\';
    out += unsafe ? '?' : static_cast<char>(u);
    ++i;
  }
  if (kept.size() < text.size()) {
    out += fmt::format("…' ({} bytes)", text.size());
  } else {
    out += '\'';
  }
  return out;
}

}  // namespace sandbox
