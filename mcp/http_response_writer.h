// The one place where the HTTP listeners (the Streamable HTTP transport, the metrics listener)
// turn a response into bytes: status line, header fields, framing, body. Header values are often
// built from what a request carried (an Origin echoed for CORS, a download's file name and type,
// a token's claims in a challenge); a CR or LF in one would end that field and start another of
// the client's choosing (response splitting, CWE-113). So every field is checked here, whoever
// built it, and a response with a field that is not a field is never written.
#pragma once

#include <string>
#include <string_view>

#include "mcp/http_admission.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

// A header field name: an RFC 9110 §5.1 token, non-empty.
bool IsFieldName(std::string_view name);
// A header field value (RFC 9110 §5.5): visible ASCII, obs-text (0x80-0xff), SP and HTAB. Never
// CR, LF, NUL, DEL or another control byte.
bool IsFieldValue(std::string_view value);

// The status line and header fields of `response`, with its body unless `chunked`.
// kInternal, naming the field, when a name (or the content type) is not one a field may have:
// the response is refused whole, never written with the field cut or dropped.
Result<std::string> SerializeResponse(const HttpResponse& response, bool close, bool chunked);

// SerializeResponse(response, *close, false), or, when it refuses (logged), a plain 500 that
// closes the connection; `*close` is set then.
std::string SerializeOrServerError(const HttpResponse& response, bool* close);

}  // namespace sandbox::mcp
