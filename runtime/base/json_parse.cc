#include "runtime/base/json_parse.h"

namespace sandbox {

Status CheckJsonDepth(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          return Fail(ErrorCode::kInvalidArgument, "JSON nested deeper than {} levels (at byte {})",
                      max_depth, i);
        }
        break;
      case ']':
      case '}':
        // Unbalanced closers are the parser's to reject; the count only has to stay sane.
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return {};
}

Result<nlohmann::json> ParseJsonBounded(std::string_view text, size_t max_depth) {
  SBX_TRY(CheckJsonDepth(text, max_depth));
  nlohmann::json value =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return Fail(ErrorCode::kInvalidArgument, "not valid JSON ({} bytes)", text.size());
  }
  return value;
}

}  // namespace sandbox
