#include "mcp/auth/jwks_cache.h"

#include <curl/curl.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "runtime/docker/libcurl_on_demand.h"

namespace sandbox::mcp::auth {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};

struct Body {
  std::string data;
  size_t max_bytes = 0;
  bool too_large = false;
};

size_t Collect(char* chunk, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  size_t bytes = size * count;
  if (body->data.size() + bytes > body->max_bytes) {
    body->too_large = true;
    return 0;  // aborts the transfer
  }
  body->data.append(chunk, bytes);
  return bytes;
}

std::string StringMember(const Json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<std::string> HttpGet(const std::string& url, size_t max_bytes,
                            std::chrono::milliseconds timeout) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    std::string why = docker::LibcurlLoadError();
    return Fail(ErrorCode::kSandboxUnavailable, "curl_easy_init failed{}{}",
                why.empty() ? "" : ": ", why);
  }
  Body body;
  body.max_bytes = max_bytes;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  // Metadata and keys are fetched over http(s) only, without following redirects elsewhere
  // (RFC 8414 §3.3 wants the metadata from the issuer's own URL).
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // a worker thread: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "mcp-sandbox");
  CURLcode code = curl_easy_perform(c);
  if (body.too_large || code == CURLE_FILESIZE_EXCEEDED) {
    return Fail(ErrorCode::kSandboxUnavailable, "GET {}: larger than {} bytes", url, max_bytes);
  }
  if (code != CURLE_OK) {
    return Fail(ErrorCode::kSandboxUnavailable, "GET {}: {}", url, curl_easy_strerror(code));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) return Fail(ErrorCode::kSandboxUnavailable, "GET {}: HTTP {}", url, status);
  return std::move(body.data);
}

std::string AuthorizationServerMetadataUrl(const std::string& issuer) {
  auto scheme_end = issuer.find("://");
  size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : issuer.find('/', scheme_end + 3);
  std::string origin = issuer.substr(0, path_start);
  std::string path = path_start == std::string::npos ? "" : issuer.substr(path_start);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return origin + "/.well-known/oauth-authorization-server" + path;
}

std::string OpenIdConfigurationUrl(const std::string& issuer) {
  std::string base = issuer;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/.well-known/openid-configuration";
}

JwksCache::JwksCache(JwksOptions options, DocumentFetcher fetcher)
    : options_(std::move(options)), fetcher_(std::move(fetcher)) {}

Result<std::map<std::string, std::shared_ptr<const JwkKey>>> JwksCache::FetchKeys() {
  std::string jwks_uri;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jwks_uri = jwks_uri_;
  }
  if (jwks_uri.empty()) {
    std::string why;
    for (const std::string& url : {AuthorizationServerMetadataUrl(options_.issuer),
                                   OpenIdConfigurationUrl(options_.issuer)}) {
      auto text = fetcher_(url, options_.max_document_bytes, options_.fetch_timeout);
      if (!text) {
        why += (why.empty() ? "" : "; ") + text.error().message;
        continue;
      }
      auto metadata = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (!metadata.is_object()) {
        why += (why.empty() ? "" : "; ") + url + ": not a JSON object";
        continue;
      }
      // RFC 8414 §3.3: the metadata must name the issuer we asked about, or an attacker's
      // metadata (at a look-alike URL) could hand us its own keys.
      if (StringMember(metadata, "issuer") != options_.issuer) {
        why += (why.empty() ? "" : "; ") + url + ": its issuer is not " + options_.issuer;
        continue;
      }
      jwks_uri = StringMember(metadata, "jwks_uri");
      if (jwks_uri.empty()) {
        why += (why.empty() ? "" : "; ") + url + ": no jwks_uri";
        continue;
      }
      break;
    }
    if (jwks_uri.empty()) {
      return Fail(ErrorCode::kSandboxUnavailable, "no metadata for issuer {}: {}", options_.issuer,
                  why);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    jwks_uri_ = jwks_uri;
  }
  SBX_ASSIGN_OR_RETURN(auto text,
                       fetcher_(jwks_uri, options_.max_document_bytes, options_.fetch_timeout));
  auto set = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!set.is_object() || !set.contains("keys") || !set["keys"].is_array()) {
    return Fail(ErrorCode::kSandboxUnavailable, "{}: not a JWK set", jwks_uri);
  }
  std::map<std::string, std::shared_ptr<const JwkKey>> keys;
  for (const Json& jwk : set["keys"]) {
    if (keys.size() >= options_.max_keys) break;
    // Encryption keys share the set; only signing keys check tokens (RFC 7517 §4.2).
    if (!jwk.is_object() || (jwk.contains("use") && StringMember(jwk, "use") != "sig")) continue;
    auto key = JwkKey::Import(jwk);
    if (!key) {
      spdlog::debug("JWKS {}: skipping a key: {}", jwks_uri, key.error().message);
      continue;
    }
    keys.emplace((*key)->kid(), std::move(*key));
  }
  return keys;
}

Status JwksCache::Refresh() {
  std::lock_guard<std::mutex> fetching(fetch_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_attempt_ = Clock::now();
    ever_attempted_ = true;
  }
  auto keys = FetchKeys();
  if (!keys) return Fail(keys.error());
  std::lock_guard<std::mutex> lock(mutex_);
  keys_ = std::move(*keys);
  fetched_at_ = Clock::now();
  have_keys_ = true;
  return {};
}

Result<std::shared_ptr<const JwkKey>> JwksCache::Key(const std::string& kid) {
  auto find = [&]() -> std::shared_ptr<const JwkKey> {
    if (kid.empty()) return keys_.size() == 1 ? keys_.begin()->second : nullptr;
    auto it = keys_.find(kid);
    return it == keys_.end() ? nullptr : it->second;
  };
  bool fetch = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto now = Clock::now();
    bool stale = !have_keys_ || now - fetched_at_ > options_.max_age;
    bool may_fetch = !ever_attempted_ || now - last_attempt_ >= options_.min_refresh;
    auto key = find();
    if (key && !stale) return key;
    fetch = may_fetch;
    if (!fetch && key) return key;  // stale, but the issuer was asked a moment ago
  }
  Status refreshed = fetch ? Refresh() : Status{};
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto key = find()) return key;
  if (!refreshed) return Fail(refreshed.error());
  return Fail(ErrorCode::kNotFound, "the issuer publishes no signing key {}",
              kid.empty() ? "(the token names none)" : "with kid " + kid);
}

size_t JwksCache::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_.size();
}

}  // namespace sandbox::mcp::auth
