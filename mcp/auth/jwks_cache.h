// The signing keys of the authorization server that issues our access tokens: found through
// its metadata (RFC 8414 /.well-known/oauth-authorization-server, else OpenID Connect
// Discovery's /.well-known/openid-configuration), fetched from its jwks_uri with libcurl,
// imported once (mcp/auth/jwk_key.h) and cached. A token naming a kid we do not hold makes
// the cache fetch again (the issuer rotated its keys), at most once per min_refresh, so a
// stream of forged kids cannot make us hammer the issuer; keys older than max_age are fetched
// again on the next lookup. Every fetch is bounded in bytes and time.
//
// Thread-safe. A fetch runs on the calling thread (one at a time; others wait for its result)
// and takes at most fetch_timeout per document.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "mcp/auth/jwk_key.h"
#include "runtime/base/result.h"

namespace sandbox::mcp::auth {

struct JwksOptions {
  std::string issuer;  // the "iss" of our tokens, e.g. https://idp.example.com/realms/team
  std::chrono::seconds max_age{900};
  std::chrono::milliseconds min_refresh{10000};
  std::chrono::milliseconds fetch_timeout{5000};
  size_t max_document_bytes = 256u << 10;
  size_t max_keys = 64;
};

// GET `url` -> the body of a 200 answer; fails on any other status, a body over `max_bytes`,
// or when `timeout` passes. The real one is HttpGet (libcurl); tests may serve documents
// from a local server instead (a real one: this is the seam for nothing but the URL).
using DocumentFetcher = std::function<Result<std::string>(const std::string& url, size_t max_bytes,
                                                          std::chrono::milliseconds timeout)>;
Result<std::string> HttpGet(const std::string& url, size_t max_bytes,
                            std::chrono::milliseconds timeout);

// Where RFC 8414 §3.1 puts an issuer's metadata: the well-known segment goes between the host
// and the issuer's path ("https://h/t" -> "https://h/.well-known/oauth-authorization-server/t").
std::string AuthorizationServerMetadataUrl(const std::string& issuer);
// Where OpenID Connect Discovery 1.0 §4 puts it: appended to the issuer.
std::string OpenIdConfigurationUrl(const std::string& issuer);

class JwksCache {
 public:
  explicit JwksCache(JwksOptions options, DocumentFetcher fetcher = HttpGet);

  // The key named `kid` ("": the only key, when the set has exactly one). Fetches the set
  // first when it is missing, stale, or lacks `kid` (rate-limited). kNotFound when the issuer
  // does not publish it; kSandboxUnavailable when the issuer cannot be reached.
  Result<std::shared_ptr<const JwkKey>> Key(const std::string& kid);

  // Fetches now (at start-up, so the first request does not wait). Errors as Key's.
  Status Refresh();

  const JwksOptions& options() const { return options_; }
  // How many signing keys are held now.
  size_t size();

 private:
  // Fetches the metadata and the key set; called with fetch_mutex_ held.
  Result<std::map<std::string, std::shared_ptr<const JwkKey>>> FetchKeys();

  JwksOptions options_;
  DocumentFetcher fetcher_;
  std::mutex fetch_mutex_;  // one fetch at a time
  std::mutex mutex_;        // guards what follows
  std::map<std::string, std::shared_ptr<const JwkKey>> keys_;
  std::string jwks_uri_;  // from the metadata, once found
  std::chrono::steady_clock::time_point fetched_at_{};
  std::chrono::steady_clock::time_point last_attempt_{};
  bool ever_attempted_ = false;
  bool have_keys_ = false;
};

}  // namespace sandbox::mcp::auth
