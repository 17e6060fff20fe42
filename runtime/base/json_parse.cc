#include "runtime/base/json_parse.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/json_string_lift.h"

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

namespace {

// Builds the value from nlohmann's SAX events, with two differences from its own DOM builder:
// strings and keys are moved out of the lexer's buffer instead of copied (a 50 MB upload's
// base64 is then held once by the parsed value, not twice), and nesting past `max_depth` stops
// the parse where it happens.
class BoundedDomBuilder {
 public:
  using Json = nlohmann::json;

  // `lifted`: string values taken out of the text (json_string_lift.h), decoded here in their
  // place as the parser reaches the empty placeholder left for each.
  BoundedDomBuilder(Json& root, size_t max_depth, const LiftedJson& lifted)
      : root_(root), max_depth_(max_depth), lifted_(lifted) {}

  bool null() { return Add(nullptr) != nullptr; }
  bool boolean(bool value) { return Add(value) != nullptr; }
  bool number_integer(Json::number_integer_t value) { return Add(value) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t value) { return Add(value) != nullptr; }
  bool number_float(Json::number_float_t value, const Json::string_t& /*text*/) {
    return Add(value) != nullptr;
  }
  bool string(Json::string_t& value) {
    size_t ordinal = value_ordinal_++;
    if (next_lifted_ < lifted_.spans.size() &&
        lifted_.spans[next_lifted_].value_ordinal == ordinal) {
      auto decoded = DecodeJsonString(lifted_.spans[next_lifted_++].raw);
      if (!decoded) {
        error_ = decoded.error().message;
        return false;
      }
      return Add(std::move(*decoded)) != nullptr;
    }
    return Add(std::move(value)) != nullptr;
  }
  bool binary(Json::binary_t& value) { return Add(Json::binary(std::move(value))) != nullptr; }

  bool start_object(size_t /*elements*/) { return Open(Json::object()); }
  bool key(Json::string_t& name) {
    Json& object = *stack_.back();
    // A repeated key keeps the last value, as nlohmann's own parser does.
    pending_ = &object[std::move(name)];
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(size_t /*elements*/) { return Open(Json::array()); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }

  // nlohmann's message quotes the offending token, which the sender controls and may make
  // megabytes long: only the position is kept.
  bool parse_error(size_t position, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    error_ = fmt::format("not valid JSON (at byte {})", position);
    return false;
  }

  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }

 private:
  // Places a value where the parse stands (the root, after a key, or at an array's end) and
  // returns where it went.
  Json* Add(Json&& value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *pending_ = std::move(value);
    return pending_;
  }

  bool Open(Json&& container) {
    if (stack_.size() >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    stack_.push_back(Add(std::move(container)));
    return true;
  }

  Json& root_;
  size_t max_depth_;
  const LiftedJson& lifted_;
  size_t value_ordinal_ = 0;  // string values seen so far (keys are not counted)
  size_t next_lifted_ = 0;
  std::vector<Json*> stack_;
  Json* pending_ = nullptr;
  bool too_deep_ = false;
  std::string error_;
};

}  // namespace

Result<nlohmann::json> ParseJsonBounded(std::string_view text, size_t max_depth) {
  LiftedJson lifted = LiftLongStrings(text);
  if (!lifted.spans.empty()) text = lifted.reduced;
  nlohmann::json value;
  BoundedDomBuilder builder(value, max_depth, lifted);
  bool parsed = nlohmann::json::sax_parse(text.begin(), text.end(), &builder,
                                          nlohmann::json::input_format_t::json,
                                          /*strict=*/true);
  if (builder.too_deep()) {
    return Fail(ErrorCode::kInvalidArgument, "JSON nested deeper than {} levels", max_depth);
  }
  if (!parsed) {
    if (builder.error().empty()) {
      return Fail(ErrorCode::kInvalidArgument, "not valid JSON ({} bytes)", text.size());
    }
    return Fail(ErrorCode::kInvalidArgument, "{}", builder.error());
  }
  return value;
}

}  // namespace sandbox
