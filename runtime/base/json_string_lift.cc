#include "runtime/base/json_string_lift.h"

#include <cstdint>

#include "runtime/base/utf8.h"

namespace sandbox {

namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void AppendUtf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// Four hex digits at raw[i..i+4), or -1.
int32_t Hex4(std::string_view raw, size_t i) {
  if (i + 4 > raw.size()) return -1;
  int32_t value = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = raw[k];
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace

LiftedJson LiftLongStrings(std::string_view text, size_t min_bytes) {
  LiftedJson lifted;
  size_t value_ordinal = 0;
  size_t copied_up_to = 0;  // text before this is in `reduced` already
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    size_t open = i;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\') ++i;  // the escaped character cannot end the string
    }
    if (i >= text.size()) break;  // unterminated: the parser reports it
    size_t close = i;
    size_t next = close + 1;
    while (next < text.size() && IsJsonSpace(text[next])) ++next;
    if (next < text.size() && text[next] == ':') continue;  // a key
    size_t length = close - open - 1;
    if (length >= min_bytes) {
      if (lifted.spans.empty()) lifted.reduced.reserve(text.size() / 16);
      lifted.reduced.append(text.substr(copied_up_to, open - copied_up_to));
      lifted.reduced += "\"\"";
      copied_up_to = close + 1;
      lifted.spans.push_back({value_ordinal, text.substr(open + 1, length)});
    }
    ++value_ordinal;
  }
  if (!lifted.spans.empty()) lifted.reduced.append(text.substr(copied_up_to));
  return lifted;
}

Result<std::string> DecodeJsonString(std::string_view raw) {
  auto invalid = [](size_t at, std::string_view why) {
    return Fail(ErrorCode::kInvalidArgument, "not valid JSON: {} in a string (at byte {})", why,
                at);
  };
  std::string out;
  out.reserve(raw.size());
  size_t i = 0;
  while (i < raw.size()) {
    // Runs of plain characters are copied whole: base64 is all plain.
    size_t run = i;
    while (run < raw.size()) {
      auto c = static_cast<unsigned char>(raw[run]);
      if (c == '\\' || c < 0x20) break;
      if (c < 0x80) {
        ++run;
        continue;
      }
      int length = Utf8SequenceAt(raw, run);
      if (length < 0) return invalid(run, "invalid UTF-8");
      run += static_cast<size_t>(length);
    }
    out.append(raw.substr(i, run - i));
    i = run;
    if (i >= raw.size()) break;
    if (static_cast<unsigned char>(raw[i]) < 0x20) return invalid(i, "a raw control character");
    // An escape.
    if (i + 1 >= raw.size()) return invalid(i, "a cut escape");
    char kind = raw[i + 1];
    i += 2;
    switch (kind) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        int32_t unit = Hex4(raw, i);
        if (unit < 0) return invalid(i, "a bad \\u escape");
        i += 4;
        auto code = static_cast<uint32_t>(unit);
        if (code >= 0xDC00 && code <= 0xDFFF) return invalid(i, "a lone low surrogate");
        if (code >= 0xD800 && code <= 0xDBFF) {
          int32_t low = raw.substr(i, 2) == "\\u" ? Hex4(raw, i + 2) : -1;
          if (low < 0xDC00 || low > 0xDFFF) return invalid(i, "a lone high surrogate");
          i += 6;
          code = 0x10000 + ((code - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
        }
        AppendUtf8(out, code);
        break;
      }
      default:
        return invalid(i - 1, "a bad escape");
    }
  }
  return out;
}

}  // namespace sandbox
