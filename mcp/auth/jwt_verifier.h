// Validates an OAuth 2.1 access token that is a JWT (RFC 9068 profile, RFC 7519 claims):
// size first (a huge token is refused before a byte is parsed), then the header (alg on the
// asymmetric allow-list, typ an access token's: mcp/auth/jwt_header.h), the signature with the
// issuer's key of that kid (mcp/auth/jwks_cache.h), and then the claims: iss equal to our
// issuer, aud naming our resource identifier (RFC 8707), exp and nbf with a small skew.
// Scopes are read ("scope" string, or "scp" list) for the caller's policy to judge.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/auth/jwk_key.h"
#include "runtime/base/result.h"

namespace sandbox::mcp::auth {

struct JwtPolicy {
  std::string issuer;    // exact "iss"
  std::string audience;  // our resource identifier: one of "aud" must equal it
  std::chrono::seconds skew{60};
  size_t max_token_bytes = 8u << 10;
};

struct VerifiedToken {
  std::string subject;  // "sub" (RFC 9068: the client's id for client-credentials tokens)
  std::vector<std::string> scopes;
  nlohmann::json claims;  // the whole payload, for claims a policy reads (quotas)
};

// Looks up a key by kid (JwksCache::Key in the server; a fixed set in tests).
using KeyLookup = std::function<Result<std::shared_ptr<const JwkKey>>(const std::string& kid)>;

// kInvalidArgument with a fixed reason fit for an error_description ("the token has expired",
// "unknown key id": never the token's own bytes) when the token is not valid; the key lookup's own
// error (kSandboxUnavailable) when the issuer could not be asked.
Result<VerifiedToken> VerifyJwt(std::string_view token, const JwtPolicy& policy,
                                const KeyLookup& keys, std::chrono::system_clock::time_point now);

}  // namespace sandbox::mcp::auth
