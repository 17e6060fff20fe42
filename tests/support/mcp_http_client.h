// A minimal MCP client over Streamable HTTP (2025 revisions) for the native load tools
// (tests/mcp/http_load_bench, tests/soak/soak_client): one keep-alive connection, its
// Mcp-Session-Id, and JSON-RPC requests whose reply is JSON or an SSE stream.
#pragma once

#include <httplib.h>

#include <cstdlib>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace sandbox::testing {

struct HttpUrl {
  std::string host;
  int port = 0;
  std::string path;
};

// http://HOST:PORT/PATH only: the tools talk to a server on this machine.
inline bool ParseHttpUrl(const std::string& url, HttpUrl* out) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return false;
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  size_t colon = rest.find(':');
  if (slash == std::string::npos || colon == std::string::npos || colon > slash) return false;
  out->host = rest.substr(0, colon);
  out->port = std::atoi(rest.substr(colon + 1, slash - colon - 1).c_str());
  out->path = rest.substr(slash);
  return out->port > 0;
}

class McpHttpClient {
 public:
  explicit McpHttpClient(const HttpUrl& url, int read_timeout_s = 120)
      : http_(url.host, url.port), path_(url.path) {
    http_.set_keep_alive(true);
    http_.set_tcp_nodelay(true);  // headers and body go in two writes: no Nagle wait between
    http_.set_read_timeout(read_timeout_s, 0);
  }

  // The JSON-RPC response to `method` (the last `data:` line of an SSE reply), or null when the
  // HTTP exchange failed (status() and error() say how).
  nlohmann::json Request(const std::string& method, nlohmann::json params) {
    nlohmann::json body = {
        {"jsonrpc", "2.0"}, {"id", next_id_++}, {"method", method}, {"params", std::move(params)}};
    return Post(body.dump());
  }

  bool Notify(const std::string& method) {
    nlohmann::json body = {{"jsonrpc", "2.0"}, {"method", method}};
    Post(body.dump());
    return ok_;
  }

  // initialize + notifications/initialized; false when the server refused either.
  bool Initialize(const std::string& client_name) {
    nlohmann::json init =
        Request("initialize", {{"protocolVersion", "2025-11-25"},
                               {"capabilities", nlohmann::json::object()},
                               {"clientInfo", {{"name", client_name}, {"version", "1"}}}});
    return init.is_object() && init.contains("result") && Notify("notifications/initialized");
  }

  // A tools/call; the response as Request gives it.
  nlohmann::json Call(const std::string& tool, nlohmann::json arguments) {
    return Request("tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
  }

  int status() const { return status_; }
  const std::string& error() const { return error_; }

 private:
  nlohmann::json Post(const std::string& payload) {
    httplib::Headers headers = {{"Accept", "application/json, text/event-stream"}};
    if (!session_.empty()) {
      headers.emplace("Mcp-Session-Id", session_);
      headers.emplace("MCP-Protocol-Version", "2025-11-25");
    }
    auto response = http_.Post(path_, headers, payload, "application/json");
    status_ = response ? response->status : 0;
    error_ = response ? "" : httplib::to_string(response.error());
    ok_ = response && response->status / 100 == 2;
    if (!ok_) return nullptr;
    if (response->has_header("Mcp-Session-Id")) {
      session_ = response->get_header_value("Mcp-Session-Id");
    }
    std::string body = response->body;
    if (response->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0) {
      size_t at = body.rfind("data: ");
      if (at == std::string::npos) return nullptr;
      body = body.substr(at + 6, body.find('\n', at) - at - 6);
    }
    return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  }

  httplib::Client http_;
  std::string path_;
  std::string session_;
  int next_id_ = 1;
  bool ok_ = false;
  int status_ = 0;
  std::string error_;
};

}  // namespace sandbox::testing
