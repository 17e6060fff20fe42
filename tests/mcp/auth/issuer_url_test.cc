// Issue #36: an http:// OAuth issuer was accepted without a word, though its signing keys then
// travel unencrypted and whoever can change them on the way can sign any token. Accepted now
// for a loopback host (an IdP on this machine, a test) or with SANDBOX_OAUTH_ALLOW_HTTP_ISSUER,
// with a warning either way; refused otherwise, before the server listens.
#include <catch2/catch.hpp>

#include "mcp/auth/resource_server.h"
#include "mcp/http_transport.h"

namespace issuer_url_test {

using namespace sandbox;
using namespace sandbox::mcp;

TEST_CASE("oauth issuer: http:// only for loopback, or when allowed", "[unit]") {
  for (const char* loopback :
       {"http://localhost:8080/realms/t", "http://LOCALHOST", "http://127.0.0.1:9/x",
        "http://127.3.2.1", "http://[::1]:8080/", "http://user@127.0.0.1/"}) {
    INFO(loopback);
    CHECK(auth::IsLoopbackUrl(loopback));
    CHECK(auth::CheckIssuerUrl({.issuer = loopback}));
  }
  for (const char* remote :
       {"http://idp.example.com/realms/t", "http://128.0.0.1", "http://127.0.0.1.example.com/",
        "http://127.0.0.1@idp.example.com/", "http://localhost.example.com", "http://[::2]/",
        "http://10.0.0.1:8080", "http://"}) {
    INFO(remote);
    CHECK_FALSE(auth::IsLoopbackUrl(remote));
    auto refused = auth::CheckIssuerUrl({.issuer = remote});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("SANDBOX_OAUTH_ALLOW_HTTP_ISSUER"));
    CHECK(auth::CheckIssuerUrl({.issuer = remote, .allow_http_issuer = true}));
  }
  CHECK(auth::CheckIssuerUrl({.issuer = "https://idp.example.com/realms/t"}));
  CHECK(auth::CheckIssuerUrl({}));  // OAuth off
}

TEST_CASE("oauth issuer: a server with a remote http:// issuer does not start", "[unit]") {
  Server server(ServerOptions{}, {});
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  // Not a loopback name, yet a fetch from it fails at once (port 1 on this host): without the
  // check, the start would only log that the keys cannot be fetched yet.
  options.oauth.issuer = "http://0.0.0.0:1/realms/t";
  HttpTransport refused(server, options);
  auto bound = refused.Bind();
  REQUIRE_FALSE(bound);
  CHECK_THAT(bound.error().message, Catch::Contains("plain HTTP"));

  options.oauth.allow_http_issuer = true;
  HttpTransport allowed(server, options);
  CHECK(allowed.Bind());
}

}  // namespace issuer_url_test
