#include "mcp/jsonrpc.h"

#include <utility>

#include "runtime/base/json_parse.h"

namespace sandbox::mcp {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at text[pos], or, when it is invalid, minus the
// length of its maximal invalid subpart (at least 1). Table 3-7 of the Unicode standard.
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

bool IsValidId(const Json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

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

tl::expected<Json, std::string> ParseMessageJson(std::string_view text) {
  auto value = ParseJsonBounded(text, kMaxJsonDepth);
  if (!value) return tl::unexpected(fmt::format("Parse error: {}", value.error().message));
  return std::move(*value);
}

std::optional<Json> ParseJson(std::string_view text) {
  auto value = ParseMessageJson(text);
  if (!value) return std::nullopt;
  return std::move(*value);
}

tl::expected<Message, Json> ClassifyMessage(Json value) {
  auto invalid = [](const Json& id, std::string_view why) {
    return tl::unexpected<Json>(MakeErrorResponse(id, kInvalidRequest, why));
  };
  if (!value.is_object()) return invalid(nullptr, "Invalid Request: a message must be an object");
  // The id, when it can be read, is echoed in an error even if the rest is malformed.
  Json id = nullptr;
  auto id_it = value.find("id");
  bool has_id = id_it != value.end();
  if (has_id && IsValidId(*id_it)) id = *id_it;

  auto version = value.find("jsonrpc");
  if (version == value.end() || !version->is_string() || *version != "2.0") {
    return invalid(id, "Invalid Request: jsonrpc must be \"2.0\"");
  }
  auto method = value.find("method");
  if (method == value.end()) {
    // A response to a request of ours (we send none) or garbage.
    if (value.contains("result") || value.contains("error")) {
      if (!has_id) return invalid(nullptr, "Invalid Request: a response needs an id");
      Message message;
      message.kind = Message::Kind::kResponse;
      message.id = *id_it;
      return message;
    }
    return invalid(id, "Invalid Request: method is missing");
  }
  if (!method->is_string()) return invalid(id, "Invalid Request: method must be a string");
  Message message;
  message.method = method->get<std::string>();
  if (auto params = value.find("params"); params != value.end()) {
    // JSON-RPC allows arrays, but every MCP method takes an object.
    if (!params->is_object()) return invalid(id, "Invalid Request: params must be an object");
    message.params = std::move(*params);
  }
  if (!has_id) {
    message.kind = Message::Kind::kNotification;
    return message;
  }
  if (!IsValidId(*id_it)) {
    return invalid(nullptr, "Invalid Request: id must be a string or an integer (never null)");
  }
  message.kind = Message::Kind::kRequest;
  message.id = *id_it;
  return message;
}

std::string IdKey(const Json& id) { return id.dump(); }

Json MakeResponse(const Json& id, Json result) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

Json MakeErrorResponse(const Json& id, int code, std::string_view message, Json data) {
  Json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = std::move(data);
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

Json MakeNotification(std::string_view method, Json params) {
  Json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  return message;
}

std::string Serialize(const Json& message) {
  // dump() escapes control characters, so a message never contains a raw newline. The
  // replace handler is the last line of defence: tool code repairs sandbox text itself.
  return message.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace sandbox::mcp
