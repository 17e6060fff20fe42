// The Streamable HTTP transport (MCP basic/transports, 2025-03-26 to 2025-11-25) on
// Boost.Beast/Asio: POST /mcp answers with one JSON body, or with an SSE stream when
// notifications (progress, log messages) must go out before the response; GET /mcp is 405
// (this server sends nothing unprompted); DELETE /mcp ends a session. Also GET /healthz, GET
// /readyz (mcp/readiness.h) and artifact downloads at GET /files/{session_id}/{path}?token=... .
// Guards, all judged from the head before any body is read (mcp/http_admission.h): Host and
// Origin against DNS rebinding (403), bearer token (401), Accept (406), Content-Type (415),
// body size (413); then Mcp-Session-Id (400/404), MCP-Protocol-Version (400).
// Limits against hostile clients, after nginx's: header bytes and count (431), one deadline
// for the whole header phase, one for the body, an idle keep-alive timeout, and caps on
// connections per peer address and in all (503). Connections wait on a few I/O threads;
// only complete, admitted requests take a worker thread.
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

#include "mcp/auth/resource_server.h"
#include "mcp/readiness.h"
#include "mcp/server.h"
#include "runtime/base/result.h"

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
  int port = 8080;                            // 0: any free port (see HttpTransport::port())
  std::vector<std::string> auth_tokens;       // empty = no authentication; any one admits
  std::vector<std::string> auth_token_names;  // per token: its holder ("" = unnamed)
  auth::OAuthSettings oauth;                  // SANDBOX_OAUTH_* (issuer "" = off)
  std::vector<std::string> allowed_origins;   // empty: localhost/127.0.0.1/[::1] on the port
  size_t max_body_bytes = 80u << 20;
  size_t threads = 64;                  // requests worked on at once (idle connections hold none)
  size_t io_threads = 2;                // threads that wait on sockets
  size_t max_header_bytes = 32u << 10;  // request line and header fields together (431)
  size_t max_header_fields = 100;       // (431)
  std::chrono::milliseconds header_timeout{10000};      // accept / first byte -> end of headers
  std::chrono::milliseconds keep_alive_timeout{30000};  // idle between two requests
  std::chrono::milliseconds body_timeout{30000};        // plus 1 s per MiB declared
  std::chrono::milliseconds write_timeout{30000};
  size_t max_connections = 8192;                   // in all (lowered to fit RLIMIT_NOFILE)
  size_t max_connections_per_peer = 1024;          // per client IP address
  std::chrono::seconds session_idle_ttl{30 * 60};  // forget MCP sessions idle this long
  size_t max_mcp_sessions = 1000;
  FileReader read_file;  // empty: no /files downloads
  // SANDBOX_REPLICA_ID: named in transport ids; other replicas' ids are adopted
  // (mcp/transport_session_id.h). "" = a single host.
  std::string replica_id;
  std::string public_url;  // SANDBOX_PUBLIC_URL, normalized (mcp/public_url.h); "" = Host
  // What GET /readyz judges from; empty: always ready.
  std::function<ReadinessFacts()> readiness;
};

class HttpTransport {
 public:
  HttpTransport(Server& server, HttpOptions options);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds the listening socket (so port() is known before serving).
  Status Bind();
  int port() const;
  // Serves until Stop(). Returns when every connection handler has finished.
  Status Serve();
  // Stops serving: open SSE streams end, requests in flight are cancelled. Thread-safe.
  void Stop();

  // The per-session token of download URLs (an HMAC of the session id under a key made at
  // start): it grants reading that session's files and nothing else.
  std::string DownloadToken(const std::string& session_id) const;

  struct Impl;  // the sockets, the sessions and the handlers (http_transport.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandbox::mcp
