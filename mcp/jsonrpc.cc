#include "mcp/jsonrpc.h"

#include <utility>

#include "runtime/base/json_parse.h"
#include "runtime/base/utf8.h"

namespace sandbox::mcp {

namespace {

bool IsValidId(const Json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

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
