// Fuzz target: the JWT header parser (mcp/auth/jwt_header.h) and what the resource server makes
// of a token it refuses: the WWW-Authenticate challenge, which goes out as a response header.
// The input is a bearer token (any bytes); its first part is also parsed on its own, and a
// header object is built from the input too, so the fuzzer need not learn base64url first.
// Invariants: nothing throws or crashes; an accepted header has an alg on the allow-list and a
// typ an access token may have (or none); a refusal is one of the parser's fixed sentences; the
// resource server (OAuth on, an issuer whose key lookup knows no kid, or is unreachable when the
// kid is "down") refuses every such token with 401 or 503, and its challenge is a header value
// the writer takes, its error_description in RFC 6750's characters only.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <cjose/base64.h>
#include <cjose/util.h>
#include <nlohmann/json.hpp>

#include "mcp/auth/jwk_key.h"
#include "mcp/auth/jwt_header.h"
#include "mcp/auth/resource_server.h"
#include "mcp/http_admission.h"
#include "mcp/http_response_writer.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace auth = sandbox::mcp::auth;
using Json = nlohmann::json;

std::string Base64Url(std::string_view bytes) {
  char* out = nullptr;
  size_t out_len = 0;
  cjose_err err;
  if (!cjose_base64url_encode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &out,
                              &out_len, &err)) {
    return "";
  }
  std::string encoded(out, out_len);
  cjose_get_dealloc()(out);
  return encoded;
}

const std::set<std::string>& ParserRefusals() {
  static const std::set<std::string> refusals = {
      "the token's header is not base64url JSON",
      "the token's alg is not accepted (asymmetric signatures only)",
      "the token has critical header parameters",
      "the token's typ is not at+jwt (not an access token)",
      "the token's kid is not a string",
  };
  return refusals;
}

void CheckHeader(std::string_view encoded) {
  auto parsed = auth::ParseJwtHeader(encoded);
  if (!parsed) {
    FUZZ_CHECK(ParserRefusals().count(parsed.error().message) == 1);
    return;
  }
  FUZZ_CHECK(auth::IsAllowedJwsAlgorithm(parsed->alg));
  auto header = auth::DecodeJsonPart(encoded);
  FUZZ_CHECK(header.has_value());
  auto typ = header->find("typ");
  FUZZ_CHECK(typ == header->end() ||
             (typ->is_string() && auth::IsAccessTokenType(typ->get<std::string>())));
  FUZZ_CHECK(!header->contains("crit"));
}

bool ChallengeChar(char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }

void CheckChallenge(const auth::ResourceServer& server, const std::string& token) {
  auth::AuthDecision decision = server.Authenticate("Bearer " + token);
  FUZZ_CHECK(decision.status == 401 || decision.status == 503);
  FUZZ_CHECK(sandbox::mcp::IsFieldValue(decision.www_authenticate));
  auto response = sandbox::mcp::AuthRefusal(decision);
  FUZZ_CHECK(sandbox::mcp::SerializeResponse(response, true, false).has_value());
  constexpr std::string_view kDescription = "error_description=\"";
  size_t at = decision.www_authenticate.find(kDescription);
  if (at == std::string::npos) return;
  at += kDescription.size();
  size_t end = decision.www_authenticate.find('"', at);
  FUZZ_CHECK(end != std::string::npos);
  for (size_t i = at; i < end; ++i) FUZZ_CHECK(ChallengeChar(decision.www_authenticate[i]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auth::ResourceServer* server = [] {
    auth::ResourceServerPolicy policy;
    policy.issuer = "https://idp.example.test";
    policy.resource = "https://sandbox.example.test/mcp";
    auth::KeyLookup keys =
        [](const std::string& kid) -> sandbox::Result<std::shared_ptr<const auth::JwkKey>> {
      if (kid == "down") {
        return sandbox::Fail(sandbox::ErrorCode::kSandboxUnavailable, "GET {}: refused", kid);
      }
      return sandbox::Fail(sandbox::ErrorCode::kNotFound, "no key with kid {}", kid);
    };
    return new auth::ResourceServer(policy, keys);  // leaked: libFuzzer exits without unwinding
  }();
  std::string token(reinterpret_cast<const char*>(data), size);
  CheckHeader(std::string_view(token).substr(0, token.find('.')));
  CheckChallenge(*server, token);

  // The input as a header object's JSON text (when it is one), then as a whole token.
  Json header = Json::parse(token, nullptr, /*allow_exceptions=*/false);
  if (header.is_object()) {
    std::string encoded = Base64Url(header.dump(-1, ' ', false, Json::error_handler_t::replace));
    CheckHeader(encoded);
    CheckChallenge(*server, encoded + ".e30.c2ln");
  }
  return 0;
}
