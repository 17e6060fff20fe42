// The key cache against a real HTTP server on loopback (cpp-httplib) playing the issuer:
// discovery through the metadata, refresh on an unknown kid (rate-limited), and the bounds on
// what it fetches.
#include "mcp/auth/jwks_cache.h"

#include <httplib.h>

#include <thread>

#include <catch2/catch.hpp>

#include "tests/mcp/auth/fake_issuer.h"
#include "tests/mcp/auth/test_keys.h"

namespace jwks_cache_test {

using namespace sandbox;
using namespace sandbox::mcp::auth;
using sandbox::mcp::auth::testing::FakeIssuer;
using sandbox::mcp::auth::testing::TestKey;
using Json = nlohmann::json;

namespace {

JwksOptions Options(const std::string& issuer) {
  return JwksOptions{.issuer = issuer,
                     .max_age = std::chrono::seconds(900),
                     .min_refresh = std::chrono::milliseconds(300),
                     .fetch_timeout = std::chrono::milliseconds(2000),
                     .max_document_bytes = 64u << 10,
                     .max_keys = 16};
}

}  // namespace

TEST_CASE("jwks: metadata URLs follow RFC 8414 and OpenID discovery", "[unit]") {
  CHECK(AuthorizationServerMetadataUrl("https://idp.test") ==
        "https://idp.test/.well-known/oauth-authorization-server");
  CHECK(AuthorizationServerMetadataUrl("https://idp.test/realms/team/") ==
        "https://idp.test/.well-known/oauth-authorization-server/realms/team");
  CHECK(OpenIdConfigurationUrl("https://idp.test/realms/team") ==
        "https://idp.test/realms/team/.well-known/openid-configuration");
}

TEST_CASE("jwks: keys found through discovery, refetched on a new kid at a bounded rate",
          "[unit]") {
  TestKey first(TestKey::Kind::kEcP256, "k1");
  TestKey second(TestKey::Kind::kEd25519, "k2");
  FakeIssuer issuer;
  issuer.Publish({&first});
  JwksCache cache(Options(issuer.issuer()));
  REQUIRE(cache.Key("k1"));
  CHECK(cache.Key("").value()->kid() == "k1");  // the only key serves a token without kid
  CHECK(issuer.jwks_fetches_ == 1);
  // Cached: no fetch for a known kid.
  REQUIRE(cache.Key("k1"));
  CHECK(issuer.jwks_fetches_ == 1);

  // The issuer rotates. A token with the new kid before min_refresh has passed waits for it.
  issuer.Publish({&first, &second});
  auto early = cache.Key("k2");
  CHECK_FALSE(early);
  CHECK(issuer.jwks_fetches_ == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  auto rotated = cache.Key("k2");
  REQUIRE(rotated);
  CHECK(issuer.jwks_fetches_ == 2);

  // A stream of forged kids costs one fetch per min_refresh, not one per token.
  for (int i = 0; i < 20; ++i) {
    auto forged = cache.Key("forged-" + std::to_string(i));
    REQUIRE_FALSE(forged);
    CHECK(forged.error().code == ErrorCode::kNotFound);
  }
  CHECK(issuer.jwks_fetches_ <= 3);
}

TEST_CASE("jwks: a metadata document naming another issuer is not trusted", "[unit]") {
  TestKey key(TestKey::Kind::kRsa, "k1");
  FakeIssuer issuer;
  issuer.Publish({&key});
  issuer.metadata_issuer_ = "https://evil.test";
  JwksCache cache(Options(issuer.issuer()));
  auto found = cache.Key("k1");
  REQUIRE_FALSE(found);
  CHECK(found.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(found.error().message, Catch::Contains("its issuer is not"));
  CHECK(issuer.jwks_fetches_ == 0);
}

TEST_CASE("jwks: an oversized key set and an unreachable issuer fail in bounded time", "[unit]") {
  TestKey key(TestKey::Kind::kRsa, "k1");
  FakeIssuer issuer;
  issuer.Publish({&key});
  issuer.Pad(200u << 10);
  JwksCache big(Options(issuer.issuer()));
  auto found = big.Key("k1");
  REQUIRE_FALSE(found);
  CHECK_THAT(found.error().message, Catch::Contains("larger than"));

  // A port nobody listens on (bound, then closed).
  httplib::Server closed;
  int port = closed.bind_to_any_port("127.0.0.1");
  closed.stop();
  JwksCache gone(Options("http://127.0.0.1:" + std::to_string(port)));
  auto started = std::chrono::steady_clock::now();
  auto missing = gone.Key("k1");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

}  // namespace jwks_cache_test
