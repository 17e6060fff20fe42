// The JOSE header of an access token (a compact JWS, RFC 7515), read before any key is looked
// at: base64url JSON, an alg from the asymmetric allow-list (never "none", never HS*), no
// critical parameters, and a typ fit for an access token (RFC 9068 §4: "at+jwt", or the older
// "JWT" or none, so an ID token or a logout token of the same issuer is not taken for one).
// Every refusal is a fixed sentence: the header is the client's, and what it says (a kid with a
// CR LF in it, an alg of any length) must never travel into a WWW-Authenticate challenge.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox::mcp::auth {

struct JwtHeader {
  std::string alg;  // on the allow-list (IsAllowedJwsAlgorithm)
  std::string kid;  // "" when the header names none; the client's bytes, never echoed
};

// Whether `part` is unpadded base64url (RFC 7515 §2): the URL-safe alphabet only, and a length
// that is not 1 more than a multiple of 4. Checked before any byte reaches libcjose, whose
// decoder aborts the process (an assert) on input such as "a=" (found by jwt_header_fuzz).
bool IsBase64UrlPart(std::string_view part);

// A base64url (unpadded) part of a token decoded and parsed as a JSON object; nullopt otherwise.
std::optional<nlohmann::json> DecodeJsonPart(std::string_view part);

// Whether a typ header value fits an access token: "at+jwt" or "application/at+jwt" (RFC 9068
// §2.1), "JWT" or "application/jwt" (RFC 7519 §5.1, what issuers sent before RFC 9068); media
// types, so case-insensitive (RFC 7515 §4.1.9).
bool IsAccessTokenType(std::string_view typ);

// Reads the header part (the text before the first '.') of a token. kInvalidArgument with a
// fixed reason fit for an error_description when it is not a header we accept.
Result<JwtHeader> ParseJwtHeader(std::string_view encoded);

}  // namespace sandbox::mcp::auth
