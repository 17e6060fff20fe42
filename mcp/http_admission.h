// What the HTTP transport decides from a request's head alone, before it reads a byte of the body:
// which route it names, whether Host, Origin and the bearer token let it in, whether a routing
// header comes twice (mcp/http_request_headers.h), whether its Accept and Content-Type fit, and
// whether its declared body fits. Socket-free, so every refusal is testable without a server (issue
// #14), and so an unauthenticated client can never make the server read (and hold) a body.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/auth/resource_server.h"

namespace sandbox::mcp {

struct HttpField {
  std::string name;  // as received; compare case-insensitively
  std::string value;
};

// A request line and its header fields, as parsed (the body comes later, if at all).
struct HttpRequestHead {
  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // "/mcp", "/files/a/b?token=x", ...
  std::vector<HttpField> fields;
  std::optional<uint64_t> content_length;  // none: no Content-Length (chunked, or no body)
  bool chunked = false;

  // The first field named `name` (case-insensitive), or "".
  std::string_view Get(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;  // "" with an empty body: no Content-Type
  std::vector<HttpField> headers;
  std::string body;
};

// kResourceMetadata: GET /.well-known/oauth-protected-resource[/...] (RFC 9728), with OAuth on.
enum class HttpRoute { kMcp, kHealth, kReady, kMetrics, kFile, kResourceMetadata, kNone };

struct HttpAdmissionPolicy {
  std::vector<std::string> auth_tokens;  // empty = no authentication; any one admits
  // Who may call /mcp (mcp/auth/resource_server.h); null: one built from auth_tokens (unnamed).
  std::shared_ptr<const auth::ResourceServer> resource_server;
  std::vector<std::string> origins;  // lower-case full origins, or "*"
  std::vector<std::string> hosts;    // host names allowed besides loopback (lower-case)
  bool any_host = false;             // the Host check cannot hold (wildcard listen, "*")
  size_t max_body_bytes = 80u << 20;
  size_t max_other_body_bytes = 64u << 10;  // GET/DELETE/OPTIONS: nothing to upload
};

struct HttpVerdict {
  HttpRoute route = HttpRoute::kNone;
  bool admit = false;
  // Admitted to /mcp: who is calling (auth::AuthDecision::subject; "" = the single user).
  std::string subject;
  // Refused: the whole answer. Admitted: headers every response to it carries (CORS).
  HttpResponse response;
};

class HttpAdmission {
 public:
  explicit HttpAdmission(HttpAdmissionPolicy policy);

  HttpVerdict Judge(const HttpRequestHead& head) const;

  bool HostAllowed(std::string_view host_header) const;
  bool OriginAllowed(std::string_view origin) const;
  const HttpAdmissionPolicy& policy() const { return policy_; }

 private:
  HttpAdmissionPolicy policy_;
};

// A refused authentication as an HTTP answer: its status, its reason, its WWW-Authenticate.
HttpResponse AuthRefusal(const auth::AuthDecision& decision);
// A JSON-RPC error (id null) as an HTTP answer.
HttpResponse JsonErrorResponse(int status, int code, std::string_view message);
// Compares secrets in time independent of where they differ.
bool SecretEquals(std::string_view given, std::string_view expected);
// "host:port" / "[v6]:port" -> "host" / "[v6]" (lower-case).
std::string HostName(std::string_view host_header);
// The value of `key` in a query string ("a=1&token=x"), decoded; "" when absent.
std::string QueryParam(std::string_view query, std::string_view key);

}  // namespace sandbox::mcp
