// Lifting long string values out of JSON text before nlohmann parses it. nlohmann's lexer keeps
// every string token twice while reading it (the decoded value and the raw token, for its error
// messages), so a request carrying a 50 MB upload as base64 would cost the text plus two more
// copies. Long values are instead decoded straight from the text, once, and the parser sees an
// empty placeholder in their place.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox {

// String values at least this long (raw, between the quotes) are lifted.
inline constexpr size_t kLiftedStringBytes = 64 * 1024;

struct LiftedJson {
  // The text with each lifted value replaced by "" (empty when nothing was lifted: parse the
  // original then).
  std::string reduced;
  // The raw (still escaped) lifted values, in text order, with their ordinal among all string
  // values of the text (keys not counted), which is the order a SAX parser reports them in.
  struct Span {
    size_t value_ordinal = 0;
    std::string_view raw;
  };
  std::vector<Span> spans;
};

// Finds the long string values of `text`. Only meaningful for valid JSON: the caller still
// parses the reduced text, and a malformed lifted value fails in DecodeJsonString.
LiftedJson LiftLongStrings(std::string_view text, size_t min_bytes = kLiftedStringBytes);

// Decodes the inside of a JSON string literal (escapes, \uXXXX with surrogate pairs) into UTF-8.
// Fails on a raw control character, a bad escape, a lone surrogate or invalid UTF-8, as a JSON
// parser would.
Result<std::string> DecodeJsonString(std::string_view raw);

}  // namespace sandbox
