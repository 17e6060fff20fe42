// Benchmark (tools/bench.d/oauth.sh runs it; not a test): what judging one request's
// Authorization header costs the resource server, a static token side by side with JWT access
// tokens (RS256, ES256, EdDSA) whose key is already in the JWKS cache, the warm path of every
// OAuth request. The keys are made here with OpenSSL and the cache is the real JwksCache, fed its
// two documents once through its fetcher seam (no issuer to reach: the cost measured is the
// lookup and the verification, not a fetch). Prints markdown rows:
//   | token | n | p50 us | p90 us | p99 us |
// Usage: token_validation_bench [iterations per kind, default 20000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mcp/auth/jwks_cache.h"
#include "mcp/auth/resource_server.h"
#include "tests/mcp/auth/test_keys.h"

using namespace sandbox;
using namespace sandbox::mcp::auth;
using sandbox::mcp::auth::testing::TestKey;
using Json = nlohmann::json;

namespace {

constexpr char kIssuer[] = "https://idp.example.test";
constexpr char kResource[] = "https://sandbox.example.test/mcp";

double Percentile(std::vector<double>& samples, double p) {
  std::sort(samples.begin(), samples.end());
  size_t index = static_cast<size_t>(p / 100.0 * static_cast<double>(samples.size()));
  return samples[std::min(samples.size() - 1, index)];
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 20000;
  if (iterations <= 0) {
    std::fprintf(stderr, "usage: token_validation_bench [iterations > 0]\n");
    return 2;
  }
  const TestKey rsa(TestKey::Kind::kRsa, "rsa-1");
  const TestKey ec(TestKey::Kind::kEcP256, "ec-1");
  const TestKey ed(TestKey::Kind::kEd25519, "ed-1");
  Json jwks = {{"keys", Json::array({rsa.PublicJwk(), ec.PublicJwk(), ed.PublicJwk()})}};
  std::string metadata =
      Json{{"issuer", kIssuer}, {"jwks_uri", std::string(kIssuer) + "/jwks"}}.dump();
  auto cache = std::make_shared<JwksCache>(
      JwksOptions{.issuer = kIssuer,
                  .max_age = std::chrono::seconds(3600),
                  .min_refresh = std::chrono::milliseconds(10000),
                  .fetch_timeout = std::chrono::milliseconds(1000),
                  .max_document_bytes = 256u << 10,
                  .max_keys = 64},
      [&](const std::string& url, size_t, std::chrono::milliseconds) -> Result<std::string> {
        if (url.ends_with("/jwks")) return jwks.dump();
        return metadata;
      });
  if (auto fetched = cache->Refresh(); !fetched) {
    std::fprintf(stderr, "JWKS: %s\n", fetched.error().message.c_str());
    return 1;
  }
  ResourceServer server(
      ResourceServerPolicy{.static_tokens = {{.name = "ci", .secret = "static-secret-0123456789"}},
                           .issuer = kIssuer,
                           .resource = kResource,
                           .scopes = {"sandbox"},
                           .skew = std::chrono::seconds(60),
                           .max_token_bytes = 8u << 10,
                           .quota_claim = ""},
      [cache](const std::string& kid) { return cache->Key(kid); });

  auto now = std::chrono::system_clock::now();
  int64_t epoch = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  // A token as oidc-provider issues them for client credentials (a few hundred bytes of claims).
  Json claims = {{"iss", kIssuer},
                 {"aud", kResource},
                 {"sub", "alice"},
                 {"client_id", "alice"},
                 {"exp", epoch + 3600},
                 {"iat", epoch},
                 {"jti", "bench-0123456789"},
                 {"scope", "sandbox"}};
  struct Kind {
    const char* label;
    std::string header;
  };
  std::vector<Kind> kinds = {{"static token", "Bearer static-secret-0123456789"},
                             {"JWT RS256 (2048-bit), cached key", "Bearer " + rsa.Sign(claims)},
                             {"JWT ES256, cached key", "Bearer " + ec.Sign(claims)},
                             {"JWT EdDSA, cached key", "Bearer " + ed.Sign(claims)}};
  for (const Kind& kind : kinds) {
    if (server.Authenticate(kind.header).status != 200) {
      std::fprintf(stderr, "%s: refused\n", kind.label);
      return 1;
    }
  }
  // Rounds alternate the kinds so load on the host hits them alike.
  std::vector<std::vector<double>> samples(kinds.size());
  for (long round = 0; round < iterations; ++round) {
    for (size_t k = 0; k < kinds.size(); ++k) {
      auto start = std::chrono::steady_clock::now();
      AuthDecision decision = server.Authenticate(kinds[k].header, now);
      auto end = std::chrono::steady_clock::now();
      if (decision.status != 200) return 1;
      samples[k].push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
  }
  for (size_t k = 0; k < kinds.size(); ++k) {
    double p50 = Percentile(samples[k], 50);
    double p90 = Percentile(samples[k], 90);
    double p99 = Percentile(samples[k], 99);
    std::printf("| Authenticate(): %s | %zu | %.1f | %.1f | %.1f |\n", kinds[k].label,
                samples[k].size(), p50, p90, p99);
  }
  return 0;
}
