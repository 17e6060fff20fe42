#include "runtime/base/utf8.h"

namespace sandbox {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

int Utf8SequenceAt(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  int length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return -1;
  }
  for (int i = 1; i < length; ++i) {
    size_t at = pos + static_cast<size_t>(i);
    if (at >= text.size()) return -i;
    unsigned char c = byte(at);
    unsigned char lo = i == 1 ? low : 0x80;
    unsigned char hi = i == 1 ? high : 0xBF;
    if (c < lo || c > hi) return -i;
  }
  return length;
}

std::string ValidUtf8(std::string_view text) {
  std::string out;
  size_t pos = 0;
  // Fast path: most output is valid; copy it in one piece.
  while (pos < text.size()) {
    int n = Utf8SequenceAt(text, pos);
    if (n < 0) break;
    pos += static_cast<size_t>(n);
  }
  if (pos == text.size()) return std::string(text);
  out.reserve(text.size() + 16);
  out.append(text.substr(0, pos));
  while (pos < text.size()) {
    int n = Utf8SequenceAt(text, pos);
    if (n > 0) {
      out.append(text.substr(pos, static_cast<size_t>(n)));
      pos += static_cast<size_t>(n);
    } else {
      out.append(kReplacement);
      pos += static_cast<size_t>(-n);
    }
  }
  return out;
}

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // Step back over continuation bytes so the cut falls before a lead byte.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

std::string_view Utf8Suffix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t start = text.size() - max_bytes;
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
    ++start;
  }
  return text.substr(start);
}

}  // namespace sandbox
