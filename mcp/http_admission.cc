#include "mcp/http_admission.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "mcp/http_request_headers.h"
#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"
#include "runtime/base/ascii.h"
#include "runtime/base/quoted.h"

namespace sandbox::mcp {

namespace {

bool IsLoopbackName(std::string_view name) {
  return name == "localhost" || name == "127.0.0.1" || name == "[::1]" || name == "::1";
}

// A header lists a media type (or */* or type/*).
bool Accepts(std::string_view accept, std::string_view type) {
  std::string value = AsciiLower(accept);
  if (value.find(type) != std::string::npos || value.find("*/*") != std::string::npos) return true;
  std::string wildcard = std::string(type.substr(0, type.find('/'))) + "/*";
  return value.find(wildcard) != std::string::npos;
}

HttpVerdict Refuse(HttpRoute route, HttpResponse response) {
  HttpVerdict verdict;
  verdict.route = route;
  verdict.admit = false;
  verdict.response = std::move(response);
  return verdict;
}

HttpResponse PlainResponse(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.content_type = "text/plain";
  response.body = std::move(body);
  return response;
}

}  // namespace

std::string_view HttpRequestHead::Get(std::string_view name) const {
  for (const auto& field : fields) {
    if (field.name.size() == name.size() &&
        std::equal(name.begin(), name.end(), field.name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return field.value;
    }
  }
  return {};
}

std::string HostName(std::string_view host_header) {
  std::string host = AsciiLower(host_header);
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return close == std::string::npos ? host : host.substr(0, close + 1);
  }
  auto colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

bool SecretEquals(std::string_view given, std::string_view expected) {
  // Hashes first, so the length does not leak either.
  unsigned char a[EVP_MAX_MD_SIZE];
  unsigned char b[EVP_MAX_MD_SIZE];
  unsigned int a_len = 0;
  unsigned int b_len = 0;
  EVP_Digest(given.data(), given.size(), a, &a_len, EVP_sha256(), nullptr);
  EVP_Digest(expected.data(), expected.size(), b, &b_len, EVP_sha256(), nullptr);
  return a_len == b_len && CRYPTO_memcmp(a, b, a_len) == 0;
}

HttpResponse AuthRefusal(const auth::AuthDecision& decision) {
  HttpResponse response = JsonErrorResponse(decision.status, kTransportError, decision.message);
  if (!decision.www_authenticate.empty()) {
    response.headers.push_back({"WWW-Authenticate", decision.www_authenticate});
  }
  return response;
}

HttpResponse JsonErrorResponse(int status, int code, std::string_view message) {
  HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = Serialize(MakeErrorResponse(nullptr, code, std::string(message)));
  return response;
}

std::string QueryParam(std::string_view query, std::string_view key) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    std::string_view pair =
        query.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      std::string value(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
      std::replace(value.begin(), value.end(), '+', ' ');
      return PercentDecode(value).value_or("");
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return "";
}

HttpAdmission::HttpAdmission(HttpAdmissionPolicy policy) : policy_(std::move(policy)) {
  if (!policy_.resource_server) {
    policy_.resource_server = auth::MakeResourceServer(policy_.auth_tokens, {}, {}, "");
  }
}

bool HttpAdmission::HostAllowed(std::string_view host_header) const {
  if (policy_.any_host || host_header.empty()) return true;
  std::string name = HostName(host_header);
  if (IsLoopbackName(name)) return true;
  return std::find(policy_.hosts.begin(), policy_.hosts.end(), name) != policy_.hosts.end();
}

bool HttpAdmission::OriginAllowed(std::string_view origin) const {
  std::string value = AsciiLower(origin);
  while (!value.empty() && value.back() == '/') value.pop_back();
  for (const auto& allowed : policy_.origins) {
    if (allowed == "*" || allowed == value) return true;
  }
  return false;
}

HttpVerdict HttpAdmission::Judge(const HttpRequestHead& head) const {
  std::string_view target = head.target;
  std::string_view path = target.substr(0, target.find('?'));
  HttpRoute route = HttpRoute::kNone;
  if (path == "/mcp") {
    route = HttpRoute::kMcp;
  } else if (path == "/healthz") {
    route = HttpRoute::kHealth;
  } else if (path == "/readyz") {
    route = HttpRoute::kReady;
  } else if (path == "/metrics") {
    route = HttpRoute::kMetrics;
  } else if (path.rfind("/files/", 0) == 0) {
    route = HttpRoute::kFile;
  } else if (auth::IsProtectedResourceMetadataPath(path) && policy_.resource_server->oauth()) {
    route = HttpRoute::kResourceMetadata;
  }
  const std::string& method = head.method;

  if (!HostAllowed(head.Get("Host"))) {
    return Refuse(route,
                  JsonErrorResponse(403, kTransportError,
                                    "Forbidden: Host not allowed (DNS rebinding protection)"));
  }
  if (route == HttpRoute::kNone) return Refuse(route, PlainResponse(404, "not found\n"));

  HttpVerdict verdict;
  verdict.route = route;
  if (route != HttpRoute::kMcp) {
    if (method != "GET") {
      HttpResponse response = PlainResponse(405, "method not allowed\n");
      response.headers.push_back({"Allow", "GET"});
      return Refuse(route, std::move(response));
    }
    // A download's signed link is its authority; a caller that names itself as well is held
    // to its own sessions (runtime/session/session_owner.h).
    if (route == HttpRoute::kFile && !head.Get("Authorization").empty()) {
      auth::AuthDecision decision =
          policy_.resource_server->Authenticate(head.Get("Authorization"));
      if (decision.status != 200) {
        return Refuse(route, AuthRefusal(decision));
      }
      verdict.subject = std::move(decision.subject);
    }
    // The metrics say what runs here: behind the same authentication as the MCP endpoint.
    if (route == HttpRoute::kMetrics) {
      auth::AuthDecision decision =
          policy_.resource_server->Authenticate(head.Get("Authorization"));
      if (decision.status != 200) return Refuse(route, AuthRefusal(decision));
    }
  } else {
    std::string_view origin = head.Get("Origin");
    if (!origin.empty()) {
      if (!OriginAllowed(origin)) {
        return Refuse(route, JsonErrorResponse(
                                 403, kTransportError,
                                 "Forbidden: Origin not allowed (see SANDBOX_ALLOWED_ORIGINS)"));
      }
      auto& cors = verdict.response.headers;
      cors.push_back({"Access-Control-Allow-Origin", std::string(origin)});
      cors.push_back({"Vary", "Origin"});
      cors.push_back({"Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate"});
    }
    auto refuse = [&](HttpResponse response) {
      // A refusal a browser may read carries the CORS headers too.
      auto cors = verdict.response.headers;
      response.headers.insert(response.headers.begin(), cors.begin(), cors.end());
      return Refuse(route, std::move(response));
    };
    if (method != "OPTIONS") {
      auth::AuthDecision decision =
          policy_.resource_server->Authenticate(head.Get("Authorization"));
      if (decision.status != 200) return refuse(AuthRefusal(decision));
      verdict.subject = std::move(decision.subject);
    }
    // Before anything reads one of them: the router may have read another (issue #36).
    if (auto repeated = RepeatedRoutingHeader(head)) {
      return refuse(JsonErrorResponse(
          400, kHeaderMismatch,
          fmt::format("Bad Request: the {} header is sent more than once (or as a "
                      "comma-separated list); send it once, with one value",
                      Quoted(*repeated))));
    }
    if (method == "POST") {
      std::string_view accept = head.Get("Accept");
      if (!Accepts(accept, "application/json") || !Accepts(accept, "text/event-stream")) {
        return refuse(JsonErrorResponse(
            406, kTransportError,
            "Not Acceptable: Accept must list application/json and text/event-stream"));
      }
      if (AsciiLower(head.Get("Content-Type")).rfind("application/json", 0) != 0) {
        return refuse(JsonErrorResponse(
            415, kTransportError, "Unsupported Media Type: Content-Type must be application/json"));
      }
      if (head.content_length && *head.content_length > policy_.max_body_bytes) {
        return refuse(JsonErrorResponse(413, kTransportError, "Payload Too Large"));
      }
    } else if (method != "GET" && method != "DELETE" && method != "OPTIONS") {
      HttpResponse response = JsonErrorResponse(405, kTransportError, "Method Not Allowed");
      response.headers.push_back({"Allow", "GET, POST, DELETE, OPTIONS"});
      return refuse(std::move(response));
    }
  }
  if (method != "POST" && head.content_length &&
      *head.content_length > policy_.max_other_body_bytes) {
    return Refuse(route, JsonErrorResponse(413, kTransportError, "Payload Too Large"));
  }
  verdict.admit = true;
  return verdict;
}

}  // namespace sandbox::mcp
