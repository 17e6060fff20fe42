// The Streamable HTTP transport (MCP basic/transports, 2025-03-26 to 2025-11-25) on
// Boost.Beast/Asio: POST /mcp answers with one JSON body, or with an SSE stream when
// notifications (progress, log messages) must go out before the response; GET /mcp is 405
// (this server sends nothing unprompted); DELETE /mcp ends a session. Also GET /healthz, GET
// /readyz (mcp/readiness.h) and artifact downloads at GET /files/{session_id}/{path} with a
// presigned link's ?expires=...&token=... (mcp/file_downloads.h).
// Guards, all judged from the head before any body is read (mcp/http_admission.h): Host and
// Origin against DNS rebinding (403), bearer token (401), a routing header sent twice (400),
// Accept (406), Content-Type (415), body size (413); then Mcp-Session-Id (400/404),
// MCP-Protocol-Version (400). Every answer is written by mcp/http_response_writer.h.
// Limits against hostile clients, after nginx's: header bytes and count (431), one deadline
// for the whole header phase, one for the body, an idle keep-alive timeout, and caps on
// connections per peer address and in all (503). Connections wait on a few I/O threads;
// only complete, admitted requests take a worker thread.
// The rooms it joins, each socket-free: its options (mcp/http_options.h), admission
// (mcp/http_admission.h), the era of a POST (mcp/http_request_era.h), the transport sessions
// (mcp/http_session_table.h) and the writing of replies (mcp/http_reply.h); the sockets are
// mcp/http_connection.h's.
#pragma once

#include <memory>
#include <string>

#include "mcp/http_options.h"
#include "mcp/server.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

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

  // The download link of a session's file as a tool result carries it, without the scheme and
  // host ("/files/...?expires=...&token=..."; mcp/file_downloads.h), "" when there is none.
  std::string DownloadLink(const std::string& session_id, const std::string& path) const;

  struct Impl;  // the sockets, the sessions and the handlers (http_transport.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandbox::mcp
