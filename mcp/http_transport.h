// The Streamable HTTP transport (MCP basic/transports, 2025-03-26 to 2025-11-25) on
// cpp-httplib: POST /mcp answers with one JSON body, or with an SSE stream when notifications
// (progress, log messages) must go out before the response; GET /mcp is 405
// (this server sends nothing unprompted); DELETE /mcp ends a session. Also GET /healthz and
// artifact downloads at GET /files/{session_id}/{path}?token=... .
// Guards: Host and Origin against DNS rebinding (403), bearer token (401), Accept (406),
// Content-Type (415), body size (413), Mcp-Session-Id (400/404), MCP-Protocol-Version (400).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mcp/server.h"
#include "runtime/base/result.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace sandbox::mcp {

struct DownloadedFile {
  std::string content;
  std::string mime_type;
};
// Reads a file of a session for GET /files (path absolute inside the sandbox). Errors keep
// their codes: not_found / session_not_found -> 404, session_busy -> 409, ...
using FileReader =
    std::function<Result<DownloadedFile>(const std::string& session_id, const std::string& path)>;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                           // 0: any free port (see HttpTransport::port())
  std::string auth_token;                    // "" = no authentication
  std::vector<std::string> allowed_origins;  // empty: localhost/127.0.0.1/[::1] on the port
  size_t max_body_bytes = 80u << 20;
  size_t threads = 64;  // connections served at once (each keep-alive connection holds one)
  std::chrono::seconds session_idle_ttl{30 * 60};  // forget MCP sessions idle this long
  size_t max_mcp_sessions = 1000;
  FileReader read_file;  // empty: no /files downloads
};

class HttpTransport {
 public:
  HttpTransport(Server& server, HttpOptions options);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds the listening socket (so port() is known before serving).
  Status Bind();
  int port() const { return port_; }
  // Serves until Stop(). Returns when every connection handler has finished.
  Status Serve();
  // Stops serving: open SSE streams end, requests in flight are cancelled. Thread-safe.
  void Stop();

  // The per-session token of download URLs (an HMAC of the session id under a key made at
  // start): it grants reading that session's files and nothing else.
  std::string DownloadToken(const std::string& session_id) const;

 private:
  struct McpSession {
    std::shared_ptr<Connection> connection;
    std::chrono::steady_clock::time_point last_used;
  };

  void HandlePost(const httplib::Request& request, httplib::Response& response);
  void HandleDelete(const httplib::Request& request, httplib::Response& response);
  void HandleFile(const httplib::Request& request, httplib::Response& response);
  // Host/Origin/token checks; false when `response` already holds the refusal.
  bool Admit(const httplib::Request& request, httplib::Response& response, bool mcp_endpoint);
  bool HostAllowed(const std::string& host_header) const;
  bool OriginAllowed(const std::string& origin) const;
  std::shared_ptr<Connection> FindSession(const std::string& id);
  Result<std::string> NewSession(std::shared_ptr<Connection> connection);
  void ExpireSessions();
  std::string BaseUrl(const httplib::Request& request) const;

  Server& server_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::string token_key_;                 // random, for DownloadToken
  std::vector<std::string> origins_;      // lower-case, resolved at Bind()
  std::vector<std::string> extra_hosts_;  // host names allowed besides loopback
  bool any_host_ = false;

  std::mutex sessions_mutex_;
  std::unordered_map<std::string, McpSession> sessions_;
};

// 32 lowercase hex digits from the kernel's CSPRNG (getrandom(2)).
Result<std::string> RandomHex(size_t bytes = 16);

}  // namespace sandbox::mcp
