// Who is calling, decided from the Authorization header alone (before a body is read): the
// MCP authorization spec's resource-server role (OAuth 2.1, RFC 6750 bearer tokens, RFC 9728
// Protected Resource Metadata). Static bearer tokens, each with an optional name, and JWT
// access tokens from one issuer (mcp/auth/jwt_verifier.h) are accepted; the answer is the
// caller's subject, which owns the sessions it creates, or the refusal to send: 401 with a
// WWW-Authenticate that points at our metadata, or 403 insufficient_scope naming the scopes.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/auth/jwt_verifier.h"

namespace sandbox::mcp::auth {

struct StaticToken {
  std::string name;    // "" = the one user of a single-user server
  std::string secret;  // what the client sends after "Bearer "
};

struct ResourceServerPolicy {
  std::vector<StaticToken> static_tokens;
  // OAuth: off while issuer is "".
  std::string issuer;                 // SANDBOX_OAUTH_ISSUER
  std::string resource;               // our resource identifier (RFC 8707), the tokens' aud
  std::vector<std::string> scopes;    // SANDBOX_OAUTH_SCOPES: every one required
  std::chrono::seconds skew{60};      // for exp/nbf
  size_t max_token_bytes = 8u << 10;  // larger tokens are refused unread
  // SANDBOX_OAUTH_QUOTA_CLAIM: the claim whose object sets a subject's quota
  // (runtime/session/quota_claim.h); "" = the settings' quota alone.
  std::string quota_claim;
};

struct AuthDecision {
  int status = 200;  // 200 admitted; 401, 403 or 503 refused
  // Admitted: who owns what this request creates. "" for the single user (no authentication,
  // or an unnamed static token), "token:NAME" for a named static token, "oauth:SUB" for a JWT.
  // The prefixes keep a token's name from ever matching an IdP's subject.
  std::string subject;
  nlohmann::json claims;         // a JWT's payload (null otherwise), for quota claims
  std::string www_authenticate;  // refused with 401/403: the WWW-Authenticate value
  std::string message;           // refused: the reason, for the JSON-RPC error body
};

class ResourceServer {
 public:
  // `keys` finds the issuer's keys (JwksCache::Key); unused without an issuer.
  ResourceServer(ResourceServerPolicy policy, KeyLookup keys);

  // Whether any authentication is asked for (a token or an issuer is configured).
  bool enabled() const { return !policy_.static_tokens.empty() || oauth(); }
  bool oauth() const { return !policy_.issuer.empty(); }

  // Judges one request's Authorization header value ("" when absent).
  AuthDecision Authenticate(
      std::string_view authorization,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;

  // The Protected Resource Metadata document (RFC 9728 §2) and the URL it is served at
  // (§3.1: the well-known path inserted before the resource's path).
  nlohmann::json ProtectedResourceMetadata() const;
  std::string MetadataUrl() const;
  const ResourceServerPolicy& policy() const { return policy_; }

 private:
  AuthDecision Refuse(int status, const std::string& error, const std::string& description) const;
  // Remembers the quota the admitted token's claim sets for its subject (or that it sets none).
  void RememberQuota(const AuthDecision& decision) const;

  ResourceServerPolicy policy_;
  KeyLookup keys_;
};

// What SANDBOX_OAUTH_* ask for (tools/cli/config.h).
struct OAuthSettings {
  std::string issuer;  // "" = OAuth off
  std::string resource;
  std::vector<std::string> scopes;
  std::chrono::milliseconds jwks_min_refresh{10000};
  std::string quota_claim;  // SANDBOX_OAUTH_QUOTA_CLAIM
  // SANDBOX_OAUTH_ALLOW_HTTP_ISSUER: an http:// issuer on another host is accepted too.
  bool allow_http_issuer = false;
};

// Whether the issuer's URL may be trusted with our keys: https://, or http:// to a loopback host
// (an IdP on this machine, a test) or with allow_http_issuer; a plain-HTTP issuer's keys travel
// unencrypted, so anyone on the path could hand us keys of their own and sign any token. One
// that is accepted is logged as a warning. kInvalidArgument naming the setting otherwise.
Status CheckIssuerUrl(const OAuthSettings& oauth);
// The same judgment without logging (for doctor): the error serve would refuse to start with,
// else the warning it would log ("" for an https:// issuer or none).
Result<std::string> JudgeIssuerUrl(const OAuthSettings& oauth);
// Whether `url`'s host is a loopback one: localhost, 127.0.0.0/8 or [::1] (after any userinfo).
bool IsLoopbackUrl(std::string_view url);

// The resource server of a configuration: the static tokens (names[i] names secrets[i]; a
// shorter `names` leaves the rest unnamed) and, with an issuer, a JWKS cache for its keys,
// fetched once now (a failure is logged; the next token fetches again). `resource` "" takes
// `default_resource`.
std::shared_ptr<const ResourceServer> MakeResourceServer(const std::vector<std::string>& secrets,
                                                         const std::vector<std::string>& names,
                                                         OAuthSettings oauth,
                                                         const std::string& default_resource);

// "/.well-known/oauth-protected-resource" and any path below it (RFC 9728 §3.1's suffixed form).
bool IsProtectedResourceMetadataPath(std::string_view path);

}  // namespace sandbox::mcp::auth
