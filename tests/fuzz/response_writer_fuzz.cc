// Fuzz target: the response writer (mcp/http_response_writer.h), the one place HTTP answers
// become bytes. The input is a response: a status (two bytes), then NUL-separated pieces: the
// content type, then field names and values by turns, then the body. Header values built from
// request data reach the writer with any bytes, so any bytes are tried.
// Invariants: SerializeResponse refuses exactly when a name is not a token or a value (or the
// content type) holds a control byte other than HTAB; what it writes has one CRLF-terminated
// line per field it was given (status line, fields, framing, Connection) and no other CR or LF
// before the body, each field as "name: value", and the body after; SerializeOrServerError
// always writes such a response, a 500 that closes when the writer refused.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/http_response_writer.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using sandbox::mcp::HttpField;
using sandbox::mcp::HttpResponse;

// The lines of a head (up to the blank line), split at CRLF; false when a CR or LF stands
// anywhere else in it.
bool SplitHead(std::string_view bytes, std::vector<std::string_view>* lines, size_t* body_at) {
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return false;
  std::string_view head = bytes.substr(0, end + 2);
  *body_at = end + 4;
  for (size_t start = 0; start < head.size();) {
    size_t crlf = head.find("\r\n", start);
    std::string_view line = head.substr(start, crlf - start);
    if (line.find_first_of("\r\n") != std::string_view::npos) return false;
    lines->push_back(line);
    start = crlf + 2;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  HttpResponse response;
  response.status = 100 + (data[0] << 8 | data[1]) % 500;
  std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::vector<std::string_view> pieces;
  for (size_t start = 0;;) {
    size_t nul = input.find('\0', start);
    pieces.push_back(input.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  response.content_type = std::string(pieces.front());
  size_t i = 1;
  for (; i + 2 < pieces.size(); i += 2) {
    response.headers.push_back({std::string(pieces[i]), std::string(pieces[i + 1])});
  }
  for (; i < pieces.size(); ++i) response.body += pieces[i];

  bool fields_ok = sandbox::mcp::IsFieldValue(response.content_type);
  for (const HttpField& field : response.headers) {
    fields_ok = fields_ok && sandbox::mcp::IsFieldName(field.name) &&
                sandbox::mcp::IsFieldValue(field.value);
    for (char c : field.value) {
      if (c == '\r' || c == '\n') FUZZ_CHECK(!sandbox::mcp::IsFieldValue(field.value));
    }
  }
  bool chunked = data[1] & 1;
  auto written = sandbox::mcp::SerializeResponse(response, data[0] & 1, chunked);
  FUZZ_CHECK(written.has_value() == fields_ok);
  if (written) {
    std::vector<std::string_view> lines;
    size_t body_at = 0;
    FUZZ_CHECK(SplitHead(*written, &lines, &body_at));
    size_t framing = chunked || response.status != 204 ? 1 : 0;
    size_t expected =
        1 + (response.content_type.empty() ? 0 : 1) + response.headers.size() + framing + 1;
    FUZZ_CHECK(lines.size() == expected);
    size_t first_field = response.content_type.empty() ? 1 : 2;
    for (size_t f = 0; f < response.headers.size(); ++f) {
      const HttpField& field = response.headers[f];
      FUZZ_CHECK(lines[first_field + f] == field.name + ": " + field.value);
    }
    FUZZ_CHECK(std::string_view(*written).substr(body_at) == (chunked ? "" : response.body));
  }

  bool close = data[0] & 2;
  std::string sent = sandbox::mcp::SerializeOrServerError(response, &close);
  std::vector<std::string_view> lines;
  size_t body_at = 0;
  FUZZ_CHECK(SplitHead(sent, &lines, &body_at));
  FUZZ_CHECK(lines.front().rfind("HTTP/1.1 ", 0) == 0);
  if (!fields_ok) {
    FUZZ_CHECK(close);
    FUZZ_CHECK(lines.front() == "HTTP/1.1 500 Internal Server Error");
  }
  return 0;
}
