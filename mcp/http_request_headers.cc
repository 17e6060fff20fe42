#include "mcp/http_request_headers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/protocol_era.h"
#include "runtime/base/ascii.h"
#include "runtime/base/base64.h"
#include "runtime/base/quoted.h"

namespace sandbox::mcp {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kSentinelStart = "=?base64?";
constexpr std::string_view kSentinelEnd = "?=";

std::string_view TrimOws(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

// Strict RFC 4648 section 4: the standard alphabet, whole quanta, '=' only as padding.
bool IsStrictBase64(std::string_view text) {
  if (text.size() % 4 != 0) return false;
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  for (size_t i = 0; i < text.size() - padding; ++i) {
    char c = text[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

// The body value a header mirrors, as the header would spell it; nullopt when the body has no
// value there (absent or null: the client omits the header).
std::optional<std::string> HeaderForm(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  return std::nullopt;
}

// Header and body agree: the same text, or (integers) the same number, so "42.0" matches 42.
bool SameValue(const std::string& header, const Json& body) {
  if (auto form = HeaderForm(body); form && *form == header) return true;
  if (body.is_number()) {
    char* end = nullptr;
    double parsed = std::strtod(header.c_str(), &end);
    return end != header.c_str() && *end == '\0' && parsed == body.get<double>();
  }
  return false;
}

// `lower`: a field name in lower case.
bool IsRoutingHeader(std::string_view lower) {
  return lower == "mcp-protocol-version" || lower == "mcp-method" || lower == "mcp-name" ||
         lower == "mcp-session-id" || lower.rfind("mcp-param-", 0) == 0;
}

std::string Shown(std::string_view text) { return ValidUtf8(Quoted(Utf8Prefix(text, 80))); }

}  // namespace

std::optional<std::string> DecodeMcpHeaderValue(std::string_view value) {
  value = TrimOws(value);
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || byte >= 0x80) {
      if (byte != '\t') return std::nullopt;
    }
  }
  if (value.size() >= kSentinelStart.size() + kSentinelEnd.size() &&
      value.substr(0, kSentinelStart.size()) == kSentinelStart &&
      value.substr(value.size() - kSentinelEnd.size()) == kSentinelEnd) {
    std::string_view encoded = value.substr(
        kSentinelStart.size(), value.size() - kSentinelStart.size() - kSentinelEnd.size());
    if (!IsStrictBase64(encoded)) return std::nullopt;
    return Base64Decode(encoded);
  }
  return std::string(value);
}

std::optional<std::string> RepeatedRoutingHeader(const HttpRequestHead& head) {
  std::vector<std::string> seen;  // lower-case
  for (const auto& field : head.fields) {
    std::string name = AsciiLower(field.name);
    if (!IsRoutingHeader(name)) continue;
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) return field.name;
    // "a, b" is the same message as the field twice (RFC 9110 §5.3: a proxy may fold them), and
    // HAProxy's req.hdr() reads its last value. Mcp-Name is the exception: a resource URI may
    // hold a comma, and the router reads that header whole (req.fhdr()).
    if (name != "mcp-name" && field.value.find(',') != std::string::npos) return field.name;
    seen.push_back(std::move(name));
  }
  return std::nullopt;
}

std::optional<std::string> CheckRequestHeaders(const HttpRequestHead& head, const Json& message,
                                               const Json& input_schema) {
  const std::string method = message.value("method", "");
  const Json empty = Json::object();
  const Json& params =
      message.contains("params") && message["params"].is_object() ? message["params"] : empty;

  // MCP-Protocol-Version: the same revision as _meta says.
  std::string_view version_header = TrimOws(head.Get("MCP-Protocol-Version"));
  if (version_header.empty()) return "the MCP-Protocol-Version header is required";
  if (auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (auto version = meta->find(kMetaProtocolVersion);
        version != meta->end() && version->is_string() && *version != version_header) {
      return fmt::format(
          "MCP-Protocol-Version header value {} does not match _meta[\"{}\"] value {}",
          Shown(version_header), kMetaProtocolVersion, Shown(version->get<std::string>()));
    }
  }

  // Mcp-Method: every request; values are case-sensitive.
  std::string_view method_header = TrimOws(head.Get("Mcp-Method"));
  if (method_header.empty()) return "the Mcp-Method header is required";
  if (method_header != method) {
    return fmt::format("Mcp-Method header value {} does not match body value {}",
                       Shown(method_header), Shown(method));
  }

  // Mcp-Name: params.name of tools/call and prompts/get, params.uri of resources/read.
  const char* name_field = method == "tools/call" || method == "prompts/get" ? "name"
                           : method == "resources/read"                      ? "uri"
                                                                             : nullptr;
  std::string_view name_raw = head.Get("Mcp-Name");
  if (name_field != nullptr) {
    auto body_name = params.find(name_field);
    bool has_body = body_name != params.end() && body_name->is_string();
    if (has_body && name_raw.empty()) {
      return fmt::format("the Mcp-Name header is required for {}", method);
    }
    if (!name_raw.empty()) {
      auto decoded = DecodeMcpHeaderValue(name_raw);
      if (!decoded) return "the Mcp-Name header holds invalid characters or invalid Base64";
      if (!has_body || *decoded != body_name->get<std::string>()) {
        return fmt::format("Mcp-Name header value {} does not match body value {}", Shown(*decoded),
                           has_body ? Shown(body_name->get<std::string>()) : "(none)");
      }
    }
  }

  // Mcp-Param-{Name}: each tool argument whose schema names a header.
  if (method == "tools/call" && input_schema.is_object()) {
    auto properties = input_schema.find("properties");
    const Json& arguments = params.contains("arguments") && params["arguments"].is_object()
                                ? params["arguments"]
                                : empty;
    if (properties != input_schema.end() && properties->is_object()) {
      for (const auto& [property, schema] : properties->items()) {
        if (!schema.is_object()) continue;
        auto header_name = schema.find("x-mcp-header");
        if (header_name == schema.end() || !header_name->is_string()) continue;
        std::string field = "Mcp-Param-" + header_name->get<std::string>();
        std::string_view raw = head.Get(field);
        auto body = arguments.find(property);
        bool has_body = body != arguments.end() && !body->is_null();
        if (raw.empty()) {
          if (has_body) return fmt::format("the {} header is required: {} is set", field, property);
          continue;
        }
        auto decoded = DecodeMcpHeaderValue(raw);
        if (!decoded) {
          return fmt::format("the {} header holds invalid characters or invalid Base64", field);
        }
        if (!has_body || !SameValue(*decoded, *body)) {
          return fmt::format("{} header value {} does not match argument {}", field,
                             Shown(*decoded), property);
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace sandbox::mcp
