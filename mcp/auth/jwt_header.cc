#include "mcp/auth/jwt_header.h"

#include <cstdint>

#include <cjose/base64.h>
#include <cjose/util.h>

#include "mcp/auth/jwk_key.h"
#include "runtime/base/ascii.h"

namespace sandbox::mcp::auth {

namespace {

using Json = nlohmann::json;

tl::unexpected<Error> InvalidToken(std::string_view why) {
  return Fail(ErrorCode::kInvalidArgument, "{}", why);
}

}  // namespace

bool IsBase64UrlPart(std::string_view part) {
  for (char c : part) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return part.size() % 4 != 1;
}

std::optional<Json> DecodeJsonPart(std::string_view part) {
  if (!IsBase64UrlPart(part)) return std::nullopt;
  uint8_t* out = nullptr;
  size_t out_len = 0;
  cjose_err err;
  if (!cjose_base64url_decode(part.data(), part.size(), &out, &out_len, &err)) return std::nullopt;
  Json value = Json::parse(out, out + out_len, nullptr, /*allow_exceptions=*/false);
  cjose_get_dealloc()(out);
  if (!value.is_object()) return std::nullopt;
  return value;
}

bool IsAccessTokenType(std::string_view typ) {
  std::string lower = AsciiLower(typ);
  return lower == "at+jwt" || lower == "application/at+jwt" || lower == "jwt" ||
         lower == "application/jwt";
}

Result<JwtHeader> ParseJwtHeader(std::string_view encoded) {
  auto header = DecodeJsonPart(encoded);
  if (!header) return InvalidToken("the token's header is not base64url JSON");
  auto alg = header->find("alg");
  // The allow-list is checked before a key is chosen: "none" has no signature to check, and an
  // HS* token "signed" with our public key would verify under a library that uses the key's
  // bytes as the HMAC secret.
  if (alg == header->end() || !alg->is_string() ||
      !IsAllowedJwsAlgorithm(alg->get_ref<const std::string&>())) {
    return InvalidToken("the token's alg is not accepted (asymmetric signatures only)");
  }
  if (header->contains("crit")) return InvalidToken("the token has critical header parameters");
  if (auto typ = header->find("typ"); typ != header->end()) {
    if (!typ->is_string() || !IsAccessTokenType(typ->get_ref<const std::string&>())) {
      return InvalidToken("the token's typ is not at+jwt (not an access token)");
    }
  }
  JwtHeader parsed;
  parsed.alg = alg->get<std::string>();
  if (auto kid = header->find("kid"); kid != header->end()) {
    if (!kid->is_string()) return InvalidToken("the token's kid is not a string");
    parsed.kid = kid->get<std::string>();
  }
  return parsed;
}

}  // namespace sandbox::mcp::auth
