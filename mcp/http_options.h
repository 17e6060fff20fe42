// What the Streamable HTTP transport is told (HttpOptions, filled by `serve` from the
// configuration), and what follows from it alone once the port is bound: who may call (the
// admission policy's origins and hosts) and which resource identifier tokens must name. Pure
// functions, so the defaults a deployment gets are testable without a socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/auth/resource_server.h"
#include "mcp/http_admission.h"
#include "mcp/readiness.h"
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
// How long a download link opens its file unless SANDBOX_DOWNLOAD_TTL says otherwise: past a
// model's turn and a person's click on the link it shows, short enough that a leaked link dies.
inline constexpr std::chrono::seconds kDownloadLinkTtl{3600};

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
  // SANDBOX_DOWNLOAD_TTL: how long a download link opens its file (mcp/file_downloads.h).
  std::chrono::seconds download_ttl = kDownloadLinkTtl;
  // SANDBOX_REPLICA_ID: named in transport ids; other replicas' ids are adopted
  // (mcp/transport_session_id.h). "" = a single host.
  std::string replica_id;
  std::string public_url;  // SANDBOX_PUBLIC_URL, normalized (mcp/public_url.h); "" = Host
  // What GET /readyz judges from; empty: always ready.
  std::function<ReadinessFacts()> readiness;
};

// "0.0.0.0", "::", "[::]" or "": every address of the host, so clients may use any name.
bool IsWildcardAddress(std::string_view host);

// `host:port` as a URL authority (an IPv6 address in brackets).
std::string ListeningAuthority(const std::string& host, int port);

// Who may call, from the options and the bound port: the configured origins (and their hosts),
// else the loopback names on the port; any Host when listening on a wildcard address without
// configured origins or with "*"; the public URL's host and the bound host besides. The
// resource server is left null for the caller (making it fetches the issuer's keys).
HttpAdmissionPolicy AdmissionPolicyFor(const HttpOptions& options, int bound_port);

// Our resource identifier (RFC 8707) when SANDBOX_OAUTH_RESOURCE is unset: the public URL's
// /mcp, else the bound one's (127.0.0.1 for a wildcard address).
std::string DefaultResourceId(const HttpOptions& options, int bound_port);

}  // namespace sandbox::mcp
