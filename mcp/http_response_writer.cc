#include "mcp/http_response_writer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/base/quoted.h"

namespace sandbox::mcp {

namespace {

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

// RFC 9110 §5.6.2 tchar.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  for (char allowed : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == allowed) return true;
  }
  return false;
}

// Whose value is refused, said without the value's bytes.
tl::unexpected<Error> Refused(std::string_view name) {
  return Fail(ErrorCode::kInternal,
              "response header {} holds a byte a header may not (CR, LF or another control byte)",
              Quoted(name));
}

}  // namespace

bool IsFieldName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

bool IsFieldValue(std::string_view value) {
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7f) return false;
  }
  return true;
}

Result<std::string> SerializeResponse(const HttpResponse& response, bool close, bool chunked) {
  if (!IsFieldValue(response.content_type)) return Refused("Content-Type");
  for (const auto& field : response.headers) {
    if (!IsFieldName(field.name) || !IsFieldValue(field.value)) return Refused(field.name);
  }
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", response.status, Reason(response.status));
  if (!response.content_type.empty()) out += "Content-Type: " + response.content_type + "\r\n";
  for (const auto& field : response.headers) out += field.name + ": " + field.value + "\r\n";
  if (chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (response.status != 204) {
    out += fmt::format("Content-Length: {}\r\n", response.body.size());
  }
  out += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
  if (!chunked) out += response.body;
  return out;
}

std::string SerializeOrServerError(const HttpResponse& response, bool* close) {
  auto bytes = SerializeResponse(response, *close, false);
  if (bytes) return std::move(*bytes);
  spdlog::warn("HTTP {} answer not sent, 500 instead: {}", response.status, bytes.error().message);
  *close = true;
  static const std::string server_error =
      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
      "Connection: close\r\n\r\ninternal server error\n";
  return server_error;
}

}  // namespace sandbox::mcp
