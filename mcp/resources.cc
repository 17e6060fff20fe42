#include "mcp/resources.h"

#include "mcp/jsonrpc.h"
#include "runtime/base/base64.h"

namespace sandbox::mcp {

namespace {
// Cursors carry a tag, so a cursor of another list (or a guess) is told apart from ours.
constexpr std::string_view kCursorTag = "mcp-sandbox/1:";
}  // namespace

Json ResourceErrorResponse(const Json& id, std::string_view uri, const Error& error,
                           std::string_view protocol_version) {
  // The uri is the client's: echoed cut, like every value an error quotes.
  Json data = {{"uri", ValidUtf8(Utf8Prefix(uri, 256))}, {"error", ErrorCodeName(error.code)}};
  switch (error.code) {
    case ErrorCode::kNotFound:
    case ErrorCode::kSessionNotFound: {
      // Revisions are dates, so they compare as strings.
      int code = protocol_version >= "2026-07-28" ? kInvalidParams : kResourceNotFound;
      return MakeErrorResponse(id, code, "Resource not found: " + ValidUtf8(error.message),
                               std::move(data));
    }
    case ErrorCode::kInvalidPath:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kInvalidSessionId:
    case ErrorCode::kArtifactTooLarge:
      return MakeErrorResponse(id, kInvalidParams, ValidUtf8(error.message), std::move(data));
    default:
      return MakeErrorResponse(id, kInternalError, ValidUtf8(error.message), std::move(data));
  }
}

std::string EncodeCursor(std::string_view position) {
  std::string raw(kCursorTag);
  raw += position;
  return Base64Encode(raw);
}

std::optional<std::string> DecodeCursor(std::string_view cursor) {
  auto raw = Base64Decode(cursor);
  if (!raw || raw->compare(0, kCursorTag.size(), kCursorTag) != 0) return std::nullopt;
  return raw->substr(kCursorTag.size());
}

}  // namespace sandbox::mcp
