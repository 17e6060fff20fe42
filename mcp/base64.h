// Base64 (RFC 4648) for MCP blobs: image data, embedded resources, uploaded file content.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandbox::mcp {

std::string Base64Encode(std::string_view bytes);
// Decodes the standard or the URL-safe alphabet, with or without padding; ASCII whitespace
// (MIME line breaks) is skipped. nullopt on any other character or a malformed length.
std::optional<std::string> Base64Decode(std::string_view text);
// The decoded size of `text` without decoding it (an upper bound when whitespace is present).
size_t Base64DecodedSizeBound(std::string_view text);

}  // namespace sandbox::mcp
