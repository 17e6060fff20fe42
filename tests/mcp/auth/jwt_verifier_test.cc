// Access-token validation against keys made here with OpenSSL: each kind of signature the
// issuer may use is accepted, and each forgery and each wrong claim is refused.
#include "mcp/auth/jwt_verifier.h"

#include <catch2/catch.hpp>

#include "mcp/auth/resource_server.h"
#include "tests/mcp/auth/test_keys.h"

namespace jwt_verifier_test {

using namespace sandbox;
using namespace sandbox::mcp::auth;
using sandbox::mcp::auth::testing::TestKey;
namespace test_keys = sandbox::mcp::auth::testing;
using Json = nlohmann::json;

namespace {

constexpr char kIssuer[] = "https://idp.example.test";
constexpr char kResource[] = "https://sandbox.example.test/mcp";

const TestKey& Rsa() {
  static const TestKey key(TestKey::Kind::kRsa, "rsa-1");
  return key;
}
const TestKey& Ec() {
  static const TestKey key(TestKey::Kind::kEcP256, "ec-1");
  return key;
}
const TestKey& Ed() {
  static const TestKey key(TestKey::Kind::kEd25519, "ed-1");
  return key;
}

auto Now() { return std::chrono::system_clock::now(); }

int64_t Epoch(int64_t offset_s = 0) {
  return std::chrono::duration_cast<std::chrono::seconds>(Now().time_since_epoch()).count() +
         offset_s;
}

Json Claims(Json extra = Json::object()) {
  Json claims = {{"iss", kIssuer},    {"aud", kResource}, {"sub", "alice"},
                 {"exp", Epoch(300)}, {"iat", Epoch()},   {"scope", "sandbox openid"}};
  claims.update(extra);
  return claims;
}

// The published set: the three keys above.
KeyLookup Keys() {
  return [](const std::string& kid) -> Result<std::shared_ptr<const JwkKey>> {
    for (const TestKey* key : {&Rsa(), &Ec(), &Ed()}) {
      if (key->kid() == kid) return JwkKey::Import(key->PublicJwk());
    }
    return Fail(ErrorCode::kNotFound, "no key {}", kid);
  };
}

JwtPolicy Policy() {
  return JwtPolicy{.issuer = kIssuer,
                   .audience = kResource,
                   .skew = std::chrono::seconds(60),
                   .max_token_bytes = 8u << 10};
}

std::string Refusal(const std::string& token) {
  auto verified = VerifyJwt(token, Policy(), Keys(), Now());
  REQUIRE_FALSE(verified);
  return verified.error().message;
}

}  // namespace

TEST_CASE("jwt: RS256, ES256 and EdDSA tokens from the issuer are accepted", "[unit]") {
  for (const TestKey* key : {&Rsa(), &Ec(), &Ed()}) {
    INFO(key->alg());
    auto verified = VerifyJwt(key->Sign(Claims()), Policy(), Keys(), Now());
    REQUIRE(verified);
    CHECK(verified->subject == "alice");
    CHECK(verified->scopes == std::vector<std::string>{"sandbox", "openid"});
  }
  auto listed = VerifyJwt(
      Rsa().Sign(Claims({{"aud", {"other", kResource}}, {"scope", nullptr}, {"scp", {"sandbox"}}})),
      Policy(), Keys(), Now());
  REQUIRE(listed);
  CHECK(listed->scopes == std::vector<std::string>{"sandbox"});
}

TEST_CASE("jwt: alg none and HS256 signed with the public key are refused", "[unit]") {
  CHECK_THAT(Refusal(test_keys::Compact({{"alg", "none"}, {"kid", "rsa-1"}}, Claims(), "")),
             Catch::Contains("alg is not accepted"));
  // The classic confusion: the public key's PEM used as an HMAC secret.
  std::string hs =
      test_keys::SignHs256({{"alg", "HS256"}, {"kid", "rsa-1"}}, Claims(), Rsa().PublicPem());
  CHECK_THAT(Refusal(hs), Catch::Contains("alg is not accepted"));
  CHECK_THAT(Refusal(test_keys::Compact({{"kid", "rsa-1"}}, Claims(), "c2ln")),
             Catch::Contains("alg is not accepted"));
  // An RSA key asked to check an ES256 signature (alg/key confusion the other way).
  std::string es_token = Ec().Sign(Claims(), {{"kid", "rsa-1"}});
  CHECK_THAT(Refusal(es_token), Catch::Contains("does not sign with its alg"));
}

TEST_CASE("jwt: a tampered payload or signature does not verify", "[unit]") {
  for (const TestKey* key : {&Rsa(), &Ec(), &Ed()}) {
    INFO(key->alg());
    std::string token = key->Sign(Claims());
    size_t first = token.find('.');
    size_t second = token.find('.', first + 1);
    std::string other_payload = test_keys::Base64Url(Claims({{"sub", "mallory"}}).dump());
    std::string swapped = token.substr(0, first + 1) + other_payload + token.substr(second);
    CHECK_THAT(Refusal(swapped), Catch::Contains("signature does not verify"));
    std::string flipped = token;
    flipped[second + 5] = flipped[second + 5] == 'A' ? 'B' : 'A';
    CHECK_THAT(Refusal(flipped), Catch::Contains("signature does not verify"));
  }
}

TEST_CASE("jwt: issuer, audience, expiry and not-before are checked with a small skew", "[unit]") {
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"iss", "https://evil.test"}}))),
             Catch::Contains("another issuer"));
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"aud", "https://other.test/mcp"}}))),
             Catch::Contains("another audience"));
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"aud", nullptr}}))), Catch::Contains("another audience"));
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"exp", Epoch(-120)}}))), Catch::Contains("expired"));
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"exp", nullptr}}))), Catch::Contains("no exp"));
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"nbf", Epoch(600)}}))), Catch::Contains("not valid yet"));
  // Within the skew: a clock a little behind or ahead is forgiven.
  CHECK(VerifyJwt(Rsa().Sign(Claims({{"exp", Epoch(-30)}, {"nbf", Epoch(30)}})), Policy(), Keys(),
                  Now()));
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"sub", nullptr}}))), Catch::Contains("no subject"));
}

TEST_CASE("jwt: unknown kid, oversized and malformed tokens are refused", "[unit]") {
  auto unknown = VerifyJwt(Rsa().Sign(Claims(), {{"kid", "rotated-2"}}), Policy(), Keys(), Now());
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == ErrorCode::kInvalidArgument);
  CHECK(unknown.error().message == "unknown key id");
  CHECK_THAT(Refusal(Rsa().Sign(Claims({{"pad", std::string(16 << 10, 'x')}}))),
             Catch::Contains("larger than"));
  CHECK_THAT(Refusal("not-a-jwt"), Catch::Contains("three base64url parts"));
  CHECK_THAT(Refusal("a.b.c.d"), Catch::Contains("three base64url parts"));
  CHECK_THAT(Refusal("%%%.e30.x"), Catch::Contains("three base64url parts"));
  CHECK_THAT(Refusal("bm90anNvbg.e30.c2ln"), Catch::Contains("header is not base64url JSON"));
  // libcjose's decoder aborts the process on these (an assert): they must never reach it, in
  // any part, whether the header names a known key or not (jwt_header_fuzz found "a=").
  std::string good = Rsa().Sign(Claims());
  size_t first = good.find('.');
  size_t second = good.find('.', first + 1);
  for (std::string bad : {"a=", "a===", "abcde", "ab=c", "e30="}) {
    INFO(bad);
    CHECK_THAT(Refusal(bad + good.substr(first)), Catch::Contains("three base64url parts"));
    CHECK_THAT(Refusal(good.substr(0, first + 1) + bad + good.substr(second)),
               Catch::Contains("three base64url parts"));
    CHECK_THAT(Refusal(good.substr(0, second + 1) + bad), Catch::Contains("three base64url parts"));
  }
  CHECK_THAT(Refusal(Rsa().Sign(Claims(), {{"crit", {"exp"}}})), Catch::Contains("critical"));
}

// RFC 9068 §4: a JWT of another type (an ID token, a logout token) signed by the same issuer is
// not an access token.
TEST_CASE("jwt: typ at+jwt, JWT or none is an access token, any other type is refused", "[unit]") {
  for (const char* typ : {"at+jwt", "AT+JWT", "application/at+jwt", "Application/AT+JWT", "JWT",
                          "jwt", "application/jwt"}) {
    INFO(typ);
    CHECK(VerifyJwt(Rsa().Sign(Claims(), {{"typ", typ}}), Policy(), Keys(), Now()));
  }
  auto untyped = Rsa().Sign(Claims(), {{"typ", nullptr}});
  CHECK(VerifyJwt(untyped, Policy(), Keys(), Now()));
  for (const Json& typ : {Json("id+jwt"), Json("logout+jwt"), Json("dpop+jwt"), Json(""),
                          Json("at+jwt "), Json(1), Json::array({"at+jwt"})}) {
    INFO(typ.dump());
    CHECK(Refusal(Rsa().Sign(Claims(), {{"typ", typ}})) ==
          "the token's typ is not at+jwt (not an access token)");
  }
}

// Issue #36: what a token's header says never comes back in a refusal, so it cannot reach the
// WWW-Authenticate challenge (response splitting) or the error body.
TEST_CASE("jwt: a hostile kid or alg is refused in fixed words", "[unit]") {
  const std::string hostile = "k9\r\nX-Injected: 1";
  auto unknown_kid = Refusal(Rsa().Sign(Claims(), {{"kid", hostile}}));
  CHECK(unknown_kid == "unknown key id");
  auto bad_alg =
      Refusal(test_keys::Compact({{"alg", hostile}, {"kid", "rsa-1"}}, Claims(), "c2ln"));
  CHECK(bad_alg == "the token's alg is not accepted (asymmetric signatures only)");
  CHECK(Refusal(test_keys::Compact({{"alg", "RS256"}, {"kid", 7}}, Claims(), "c2ln")) ==
        "the token's kid is not a string");
}

TEST_CASE("jwk: symmetric and private keys are never imported", "[unit]") {
  CHECK_FALSE(JwkKey::Import({{"kty", "oct"}, {"k", "c2VjcmV0"}}));
  Json with_private = Rsa().PublicJwk();
  with_private["d"] = "AQAB";
  CHECK_FALSE(JwkKey::Import(with_private));
  CHECK_FALSE(JwkKey::Import({{"kty", "OKP"}, {"crv", "X25519"}, {"x", "AAAA"}}));
  CHECK_FALSE(JwkKey::Import({{"kty", "RSA"}, {"n", "!!"}, {"e", "AQAB"}}));
  auto key = JwkKey::Import(Ec().PublicJwk());
  REQUIRE(key);
  CHECK((*key)->Fits("ES256"));
  CHECK_FALSE((*key)->Fits("ES384"));
  CHECK_FALSE((*key)->Fits("HS256"));
  CHECK_FALSE((*key)->Fits("none"));
}

// libcjose's base64url decoder aborts the process (an assert) on "a=" and the like; an issuer's
// key set holding such a value must be refused, key by key, before cjose decodes it.
TEST_CASE("jwk: a key member that is not unpadded base64url is refused before libcjose sees it",
          "[unit]") {
  for (const char* bad : {"a=", "a===", "ab=c", "AQAB=", "abcde", "a+b/"}) {
    INFO(bad);
    Json rsa = Rsa().PublicJwk();
    for (const char* member : {"n", "e"}) {
      Json jwk = rsa;
      jwk[member] = bad;
      auto refused = JwkKey::Import(jwk);
      REQUIRE_FALSE(refused);
      CHECK_THAT(refused.error().message, Catch::Contains("not unpadded base64url"));
    }
    Json ec = Ec().PublicJwk();
    for (const char* member : {"x", "y"}) {
      Json jwk = ec;
      jwk[member] = bad;
      CHECK_FALSE(JwkKey::Import(jwk));
    }
    CHECK_FALSE(JwkKey::Import({{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", bad}}));
  }
  Json numeric = Rsa().PublicJwk();
  numeric["e"] = 65537;
  CHECK_FALSE(JwkKey::Import(numeric));
  CHECK(JwkKey::Import(Rsa().PublicJwk()));
}

TEST_CASE("resource server: 401, 403 insufficient_scope, named static tokens", "[unit]") {
  ResourceServerPolicy policy;
  policy.static_tokens = {{"alice", "secret-a"}, {"", "legacy"}, {"bob", "secret-b"}};
  policy.issuer = kIssuer;
  policy.resource = kResource;
  policy.scopes = {"sandbox"};
  ResourceServer server(policy, Keys());
  CHECK(server.MetadataUrl() ==
        "https://sandbox.example.test/.well-known/oauth-protected-resource/mcp");

  auto none = server.Authenticate("");
  CHECK(none.status == 401);
  CHECK(none.www_authenticate == "Bearer resource_metadata=\"" + server.MetadataUrl() + "\"");

  CHECK(server.Authenticate("Bearer secret-a").subject == "token:alice");
  CHECK(server.Authenticate("bearer secret-b").subject == "token:bob");
  auto legacy = server.Authenticate("Bearer legacy");
  CHECK(legacy.status == 200);
  CHECK(legacy.subject.empty());

  auto jwt = server.Authenticate("Bearer " + Ed().Sign(Claims()));
  CHECK(jwt.status == 200);
  CHECK(jwt.subject == "oauth:alice");

  auto expired = server.Authenticate("Bearer " + Rsa().Sign(Claims({{"exp", Epoch(-600)}})));
  CHECK(expired.status == 401);
  CHECK_THAT(expired.www_authenticate, Catch::Contains("error=\"invalid_token\""));
  CHECK_THAT(expired.www_authenticate, Catch::Contains("resource_metadata="));

  auto scopeless = server.Authenticate("Bearer " + Rsa().Sign(Claims({{"scope", "openid"}})));
  CHECK(scopeless.status == 403);
  CHECK_THAT(scopeless.www_authenticate, Catch::Contains("error=\"insufficient_scope\""));
  CHECK_THAT(scopeless.www_authenticate, Catch::Contains("scope=\"sandbox\""));

  auto huge = server.Authenticate("Bearer " + std::string(100 << 10, 'a'));
  CHECK(huge.status == 401);
  CHECK_THAT(huge.message, Catch::Contains("larger than"));

  Json prm = server.ProtectedResourceMetadata();
  CHECK(prm["resource"] == kResource);
  CHECK(prm["authorization_servers"] == Json::array({kIssuer}));
  CHECK(prm["scopes_supported"] == Json::array({"sandbox"}));
  CHECK(prm["bearer_methods_supported"] == Json::array({"header"}));
  CHECK(IsProtectedResourceMetadataPath("/.well-known/oauth-protected-resource"));
  CHECK(IsProtectedResourceMetadataPath("/.well-known/oauth-protected-resource/mcp"));
  CHECK_FALSE(IsProtectedResourceMetadataPath("/.well-known/oauth-protected-resourcex"));
}

TEST_CASE("resource server: static tokens alone keep the realm challenge", "[unit]") {
  ResourceServer server({.static_tokens = {{"", "tok"}},
                         .issuer = "",
                         .resource = "",
                         .scopes = {},
                         .skew = std::chrono::seconds(60),
                         .max_token_bytes = 8u << 10,
                         .quota_claim = ""},
                        nullptr);
  CHECK(server.Authenticate("Bearer tok").status == 200);
  auto refused = server.Authenticate("Bearer nope");
  CHECK(refused.status == 401);
  CHECK(refused.www_authenticate == R"(Bearer realm="mcp-sandbox")");
  ResourceServer open({}, nullptr);
  CHECK(open.Authenticate("").status == 200);
}

}  // namespace jwt_verifier_test
