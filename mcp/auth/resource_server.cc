#include "mcp/auth/resource_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mcp/auth/jwks_cache.h"
#include "mcp/http_admission.h"  // SecretEquals
#include "runtime/base/ascii.h"
#include "runtime/session/quota_claim.h"

namespace sandbox::mcp::auth {

namespace {

constexpr std::string_view kMetadataPath = "/.well-known/oauth-protected-resource";

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out;
}

// A quoted-string value of a challenge in the characters RFC 6750 §3 allows error_description
// and scope (%x20-21 / %x23-5B / %x5D-7E); any other byte becomes '?'. Our descriptions are
// fixed sentences; this keeps a future one that quotes something from ever closing the quote
// or the header.
std::string ChallengeText(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    bool allowed = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
    if (!allowed) c = '?';
  }
  return out;
}

}  // namespace

bool IsProtectedResourceMetadataPath(std::string_view path) {
  return path == kMetadataPath ||
         (path.rfind(kMetadataPath, 0) == 0 && path[kMetadataPath.size()] == '/');
}

ResourceServer::ResourceServer(ResourceServerPolicy policy, KeyLookup keys)
    : policy_(std::move(policy)), keys_(std::move(keys)) {}

std::string ResourceServer::MetadataUrl() const {
  const std::string& resource = policy_.resource;
  auto scheme_end = resource.find("://");
  size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : resource.find('/', scheme_end + 3);
  std::string origin = resource.substr(0, path_start);
  std::string path = path_start == std::string::npos ? "" : resource.substr(path_start);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return origin + std::string(kMetadataPath) + path;
}

nlohmann::json ResourceServer::ProtectedResourceMetadata() const {
  nlohmann::json document = {
      {"resource", policy_.resource},
      {"authorization_servers", nlohmann::json::array({policy_.issuer})},
      {"bearer_methods_supported", nlohmann::json::array({"header"})},
      {"resource_name", "mcp-sandbox"},
  };
  if (!policy_.scopes.empty()) document["scopes_supported"] = policy_.scopes;
  return document;
}

AuthDecision ResourceServer::Refuse(int status, const std::string& error,
                                    const std::string& description) const {
  AuthDecision decision;
  decision.status = status;
  if (!oauth()) {
    // Static tokens only: there is no metadata to point at.
    decision.www_authenticate = R"(Bearer realm="mcp-sandbox")";
  } else {
    // RFC 6750 §3: error only when a token was presented; RFC 9728 §5.1: resource_metadata.
    decision.www_authenticate =
        fmt::format(R"(Bearer resource_metadata="{}")", ChallengeText(MetadataUrl()));
    if (!error.empty()) {
      decision.www_authenticate +=
          fmt::format(R"(, error="{}", error_description="{}")", error, ChallengeText(description));
    }
    if (status == 403 && !policy_.scopes.empty()) {
      decision.www_authenticate +=
          fmt::format(R"(, scope="{}")", ChallengeText(Join(policy_.scopes)));
    }
  }
  switch (status) {
    case 403:
      decision.message = "Forbidden: " + description;
      break;
    case 503:
      decision.message = "Service Unavailable: " + description;
      break;
    default:
      decision.message = "Unauthorized: " +
                         (description.empty() ? "a valid bearer token is required" : description);
  }
  return decision;
}

AuthDecision ResourceServer::Authenticate(std::string_view authorization,
                                          std::chrono::system_clock::time_point now) const {
  if (!enabled()) return AuthDecision{};
  constexpr std::string_view kBearer = "bearer ";
  bool bearer = authorization.size() > kBearer.size() &&
                std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                           [](char a, char b) { return a == (b | 0x20); });
  if (!bearer) return Refuse(401, "", "");
  std::string_view token = authorization.substr(kBearer.size());
  if (token.size() > policy_.max_token_bytes) {
    return Refuse(401, "invalid_token",
                  fmt::format("the token is larger than {} bytes", policy_.max_token_bytes));
  }
  // Every static token is compared (no early exit), so the time taken does not say which one
  // came close.
  const StaticToken* matched = nullptr;
  for (const auto& candidate : policy_.static_tokens) {
    if (SecretEquals(token, candidate.secret) && matched == nullptr) matched = &candidate;
  }
  if (matched != nullptr) {
    AuthDecision decision;
    decision.subject = matched->name.empty() ? "" : "token:" + matched->name;
    return decision;
  }
  if (!oauth()) return Refuse(401, "invalid_token", "the token is not valid");

  JwtPolicy jwt{.issuer = policy_.issuer,
                .audience = policy_.resource,
                .skew = policy_.skew,
                .max_token_bytes = policy_.max_token_bytes};
  auto verified = VerifyJwt(token, jwt, keys_, now);
  if (!verified) {
    if (verified.error().code == ErrorCode::kSandboxUnavailable) {
      return Refuse(503, "", "cannot fetch the issuer's signing keys");
    }
    return Refuse(401, "invalid_token", verified.error().message);
  }
  std::vector<std::string> missing;
  for (const auto& scope : policy_.scopes) {
    if (std::find(verified->scopes.begin(), verified->scopes.end(), scope) ==
        verified->scopes.end()) {
      missing.push_back(scope);
    }
  }
  if (!missing.empty()) {
    return Refuse(403, "insufficient_scope",
                  fmt::format("the token lacks the scope {}", Join(missing)));
  }
  AuthDecision decision;
  decision.subject = "oauth:" + verified->subject;
  decision.claims = std::move(verified->claims);
  if (!policy_.quota_claim.empty()) RememberQuota(decision);
  return decision;
}

void ResourceServer::RememberQuota(const AuthDecision& decision) const {
  auto it = decision.claims.find(policy_.quota_claim);
  if (it == decision.claims.end()) {
    RememberQuotaClaim(decision.subject, std::nullopt);
    return;
  }
  auto claim = ParseQuotaClaim(*it);
  if (!claim) {
    // The identity provider's mapping is wrong: the settings' quota holds, and the operator is
    // told (once: every request of that subject would say the same).
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      spdlog::warn("OAuth: ignoring the {} claim of {}: {} (the SANDBOX_SUBJECT_* quota holds)",
                   policy_.quota_claim, decision.subject, claim.error().message);
    }
  }
  RememberQuotaClaim(decision.subject, claim ? std::optional<QuotaClaim>(*claim) : std::nullopt);
}

bool IsLoopbackUrl(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return false;
  std::string_view authority = url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);  // http://127.0.0.1@evil.example/ is evil.example
  }
  std::string host;
  if (!authority.empty() && authority.front() == '[') {
    host = AsciiLower(authority.substr(0, authority.find(']') + 1));
    return host == "[::1]";
  }
  host = AsciiLower(authority.substr(0, authority.find(':')));
  if (host == "localhost") return true;
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

Result<std::string> JudgeIssuerUrl(const OAuthSettings& oauth) {
  const std::string& issuer = oauth.issuer;
  if (issuer.empty() || issuer.rfind("https://", 0) == 0) return std::string();
  if (issuer.rfind("http://", 0) != 0) {
    return Fail(ErrorCode::kInvalidArgument, "SANDBOX_OAUTH_ISSUER {}: not an https:// URL",
                issuer);
  }
  if (IsLoopbackUrl(issuer)) {
    return fmt::format("OAuth: the issuer {} is plain HTTP (accepted: it is on this host)", issuer);
  }
  if (oauth.allow_http_issuer) {
    return fmt::format(
        "OAuth: the issuer {} is plain HTTP (accepted: SANDBOX_OAUTH_ALLOW_HTTP_ISSUER=on): its "
        "signing keys travel unencrypted, and whoever can change them on the way can sign tokens",
        issuer);
  }
  return Fail(ErrorCode::kInvalidArgument,
              "SANDBOX_OAUTH_ISSUER {} is plain HTTP on another host: its signing keys would "
              "travel unencrypted, and whoever can change them on the way could sign tokens; use "
              "https://, or set SANDBOX_OAUTH_ALLOW_HTTP_ISSUER=on to accept it anyway",
              issuer);
}

Status CheckIssuerUrl(const OAuthSettings& oauth) {
  SBX_ASSIGN_OR_RETURN(std::string warning, JudgeIssuerUrl(oauth));
  if (!warning.empty()) spdlog::warn("{}", warning);
  return {};
}

std::shared_ptr<const ResourceServer> MakeResourceServer(const std::vector<std::string>& secrets,
                                                         const std::vector<std::string>& names,
                                                         OAuthSettings oauth,
                                                         const std::string& default_resource) {
  ResourceServerPolicy policy;
  for (size_t i = 0; i < secrets.size(); ++i) {
    policy.static_tokens.push_back({i < names.size() ? names[i] : "", secrets[i]});
  }
  KeyLookup keys;
  if (!oauth.issuer.empty()) {
    policy.issuer = oauth.issuer;
    policy.resource = oauth.resource.empty() ? default_resource : oauth.resource;
    policy.scopes = oauth.scopes;
    policy.quota_claim = oauth.quota_claim;
    JwksOptions options;
    options.issuer = oauth.issuer;
    options.min_refresh = oauth.jwks_min_refresh;
    auto cache = std::make_shared<JwksCache>(options);
    if (auto fetched = cache->Refresh(); !fetched) {
      spdlog::warn("OAuth: cannot fetch the signing keys of {} yet: {}", oauth.issuer,
                   fetched.error().message);
    }
    keys = [cache](const std::string& kid) { return cache->Key(kid); };
    spdlog::info("OAuth: accepting access tokens from {} for {} (scopes: {})", policy.issuer,
                 policy.resource, policy.scopes.empty() ? "none required" : Join(policy.scopes));
  }
  return std::make_shared<ResourceServer>(std::move(policy), std::move(keys));
}

}  // namespace sandbox::mcp::auth
