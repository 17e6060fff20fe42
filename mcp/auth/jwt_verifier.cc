#include "mcp/auth/jwt_verifier.h"

#include <optional>

#include "mcp/auth/jwt_header.h"

namespace sandbox::mcp::auth {

namespace {

using Json = nlohmann::json;

tl::unexpected<Error> Invalid(std::string_view why) {
  return Fail(ErrorCode::kInvalidArgument, "{}", why);
}

// A string member, or "" when it is absent or not a string (never an exception: the token is
// the client's input).
std::string StringClaim(const Json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A NumericDate (RFC 7519 §2): seconds since the epoch, an integer or not.
std::optional<double> NumericDate(const Json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

Result<VerifiedToken> VerifyJwt(std::string_view token, const JwtPolicy& policy,
                                const KeyLookup& keys, std::chrono::system_clock::time_point now) {
  if (token.size() > policy.max_token_bytes) {
    return Invalid(fmt::format("the token is larger than {} bytes", policy.max_token_bytes));
  }
  size_t first = token.find('.');
  size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  // All three parts before anything decodes one: the key's Verify hands the whole token to
  // libcjose, whose decoder aborts on some malformed base64url (mcp/auth/jwt_header.h).
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos ||
      !IsBase64UrlPart(token.substr(0, first)) ||
      !IsBase64UrlPart(token.substr(first + 1, second - first - 1)) ||
      !IsBase64UrlPart(token.substr(second + 1))) {
    return Invalid("the token is not a signed JWT (three base64url parts)");
  }
  SBX_ASSIGN_OR_RETURN(JwtHeader header, ParseJwtHeader(token.substr(0, first)));
  auto key = keys(header.kid);
  if (!key) {
    // The issuer could not be asked: the lookup's own error (a 503, not the client's fault).
    // Otherwise the issuer publishes no such key; the kid is the client's and is not repeated.
    if (key.error().code == ErrorCode::kSandboxUnavailable) return Fail(key.error());
    return Invalid("unknown key id");
  }
  if (!(*key)->Fits(header.alg)) return Invalid("the token's key does not sign with its alg");
  if (auto verified = (*key)->Verify(header.alg, token); !verified) {
    return Invalid("the token's signature does not verify");
  }
  auto claims = DecodeJsonPart(token.substr(first + 1, second - first - 1));
  if (!claims) return Invalid("the token's payload is not base64url JSON");

  if (StringClaim(*claims, "iss") != policy.issuer)
    return Invalid("the token is from another issuer");
  bool audience_ok = false;
  if (auto aud = claims->find("aud"); aud != claims->end()) {
    if (aud->is_string()) audience_ok = *aud == policy.audience;
    if (aud->is_array()) {
      for (const Json& one : *aud) audience_ok = audience_ok || one == policy.audience;
    }
  }
  if (!audience_ok) return Invalid("the token is for another audience (resource)");
  double now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
  double skew = static_cast<double>(policy.skew.count());
  auto exp = NumericDate(*claims, "exp");
  if (!exp) return Invalid("the token has no exp");
  if (now_s > *exp + skew) return Invalid("the token has expired");
  if (auto nbf = NumericDate(*claims, "nbf"); nbf && now_s + skew < *nbf) {
    return Invalid("the token is not valid yet (nbf)");
  }

  VerifiedToken verified;
  verified.subject = StringClaim(*claims, "sub");
  if (verified.subject.empty()) verified.subject = StringClaim(*claims, "client_id");
  if (verified.subject.empty()) return Invalid("the token names no subject (sub)");
  if (auto scope = claims->find("scope"); scope != claims->end() && scope->is_string()) {
    std::string_view list = scope->get_ref<const std::string&>();
    size_t start = 0;
    while (start < list.size()) {
      size_t end = list.find(' ', start);
      if (end == std::string_view::npos) end = list.size();
      if (end > start) verified.scopes.emplace_back(list.substr(start, end - start));
      start = end + 1;
    }
  } else if (auto scp = claims->find("scp"); scp != claims->end() && scp->is_array()) {
    for (const Json& one : *scp) {
      if (one.is_string()) verified.scopes.push_back(one.get<std::string>());
    }
  }
  verified.claims = std::move(*claims);
  return verified;
}

}  // namespace sandbox::mcp::auth
