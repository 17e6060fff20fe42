#include "mcp/http_transport.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>
#include <spdlog/spdlog.h>

#include "mcp/auth/libcjose_on_demand.h"
#include "mcp/file_downloads.h"
#include "mcp/http_admission.h"
#include "mcp/http_connection.h"
#include "mcp/http_reply.h"
#include "mcp/http_request_era.h"
#include "mcp/http_request_headers.h"
#include "mcp/http_response_writer.h"
#include "mcp/http_session_table.h"
#include "mcp/jsonrpc.h"
#include "mcp/protocol_era.h"
#include "mcp/public_url.h"
#include "mcp/tool_result.h"
#include "mcp/transport_session_id.h"
#include "mcp/worker_pool.h"
#include "runtime/base/after_reply.h"
#include "runtime/base/quoted.h"
#include "runtime/base/random_id.h"
#include "runtime/metrics/exposition.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/session_owner.h"

namespace sandbox::mcp {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

}  // namespace

struct HttpTransport::Impl : HttpConnHost {
  Impl(Server& s, HttpOptions o)
      : server(s),
        options(std::move(o)),
        sessions(options.session_idle_ttl, options.max_mcp_sessions) {}

  // Connection bookkeeping (declared before the io_context, which holds connections in its
  // handlers and is destroyed first).
  std::mutex conns_mutex;
  std::unordered_map<HttpExchange*, std::weak_ptr<HttpExchange>> conns;
  std::unordered_map<std::string, size_t> per_peer;

  Server& server;
  HttpOptions options;
  std::unique_ptr<HttpAdmission> admission;
  std::unique_ptr<FileDownloads> downloads;  // GET /files and the links to it
  int port = 0;
  std::atomic<bool> stopping{false};
  std::mutex stop_mutex;
  std::condition_variable stop_changed;

  HttpSessionTable sessions;  // Mcp-Session-Id -> its connection (2025 era)
  // This process's run, in the transport ids it issues: after a restart under the same replica
  // id, the ids of the earlier run are adopted rather than refused (mcp/transport_session_id.h).
  const std::string transport_run = RandomHex(kTransportRunHexDigits / 2);

  std::unique_ptr<WorkerPool> workers;

  // Modern requests whose tool runs inline on their worker thread, which therefore cannot
  // watch the socket: one watcher thread notices a client that closed the stream and cancels
  // the request (2026-07-28 cancellation), as it would notice a notifications/cancelled.
  struct Watched {
    std::shared_ptr<HttpExchange> exchange;
    std::shared_ptr<Connection> connection;
    std::shared_ptr<std::atomic<bool>> gone;
  };
  std::mutex watch_mutex;
  std::condition_variable watch_changed;
  std::unordered_map<uint64_t, Watched> watched;
  uint64_t next_watch = 0;
  std::thread watcher;
  void WatchLoop();
  uint64_t Watch(Watched entry);
  void Unwatch(uint64_t id);
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};

  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  // HttpConnHost
  const HttpOptions& Options() const override { return options; }
  HttpVerdict Judge(const HttpRequestHead& head) const override { return admission->Judge(head); }
  bool Submit(std::shared_ptr<HttpExchange> exchange, HttpVerdict verdict, HttpRequestHead head,
              std::string body, bool keep_alive) override {
    return workers->Submit([this, exchange = std::move(exchange), verdict = std::move(verdict),
                            head = std::move(head), body = std::move(body), keep_alive]() mutable {
      Handle(exchange, verdict, head, std::move(body), keep_alive);
    });
  }
  void Forget(HttpExchange* conn, const std::string& peer) override;
  bool Stopping() const override { return stopping; }

  void CloseAll();
  // Worker side: one complete, admitted request.
  void Handle(const std::shared_ptr<HttpExchange>& conn, const HttpVerdict& verdict,
              const HttpRequestHead& head, std::string body, bool keep_alive);
  void HandlePost(const std::shared_ptr<HttpExchange>& conn, const HttpVerdict& verdict,
                  const HttpRequestHead& head, std::string body, const std::vector<HttpField>& cors,
                  bool keep_alive);
  // One stateless request of revision 2026-07-28 (no Mcp-Session-Id): headers checked against
  // the body, served by a connection of its own, cancelled when the client closes the stream.
  void HandleModernPost(const std::shared_ptr<HttpExchange>& conn, const HttpVerdict& verdict,
                        const HttpRequestHead& head, Json value, const std::vector<HttpField>& cors,
                        bool keep_alive);
  HttpResponse HandleDelete(const HttpRequestHead& head, const std::string& subject);
  Result<std::string> NewSession(std::shared_ptr<Connection> connection);
  // Takes on another replica's transport session `id` (mcp/transport_session_id.h).
  Result<std::shared_ptr<Connection>> AdoptSession(const std::string& id,
                                                   std::string_view version_header,
                                                   const std::string& subject);
  std::string BaseUrl(const HttpRequestHead& head) const;
};

void HttpTransport::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

void HttpTransport::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (stopping || ec == asio::error::operation_aborted) return;
  if (ec) {
    // EMFILE and the like: try again shortly rather than spin.
    spdlog::warn("accept: {}", ec.message());
    accept_retry.expires_after(100ms);
    accept_retry.async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec && !stopping) Accept();
    });
    return;
  }
  ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);  // sandboxes must not inherit it
  socket.set_option(tcp::no_delay(true), ec);  // one small message per write: no Nagle delay
  beast::error_code endpoint_ec;
  auto endpoint = socket.remote_endpoint(endpoint_ec);
  std::string peer = endpoint_ec ? "" : endpoint.address().to_string();
  bool admitted = false;
  {
    std::lock_guard<std::mutex> lock(conns_mutex);
    size_t& count = per_peer[peer];
    if (conns.size() < options.max_connections && count < options.max_connections_per_peer) {
      ++count;
      admitted = true;
    } else if (count == 0) {
      per_peer.erase(peer);
    }
  }
  if (!admitted) {
    // Over a cap: say so if the socket takes it at once, and close.
    static const std::string busy_answer = [] {
      bool close = true;
      return SerializeOrServerError(
          JsonErrorResponse(503, kTransportError, "Service Unavailable: too many connections"),
          &close);
    }();
    ssize_t sent = ::send(socket.native_handle(), busy_answer.data(), busy_answer.size(),
                          MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)sent;
    metrics::HttpRefused(503);
    socket.close(ec);
  } else {
    auto conn = MakeHttpConnection(*this, std::move(socket), peer);
    {
      std::lock_guard<std::mutex> lock(conns_mutex);
      conns[conn.get()] = conn;
    }
    conn->Begin();
  }
  Accept();
}

void HttpTransport::Impl::Forget(HttpExchange* conn, const std::string& peer) {
  std::lock_guard<std::mutex> lock(conns_mutex);
  conns.erase(conn);
  auto it = per_peer.find(peer);
  if (it != per_peer.end() && --it->second == 0) per_peer.erase(it);
}

void HttpTransport::Impl::CloseAll() {
  std::vector<std::shared_ptr<HttpExchange>> open;
  {
    std::lock_guard<std::mutex> lock(conns_mutex);
    for (auto& [raw, weak] : conns) {
      if (auto conn = weak.lock()) open.push_back(std::move(conn));
    }
  }
  for (auto& conn : open) conn->PostClose();
}

HttpTransport::HttpTransport(Server& server, HttpOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

HttpTransport::~HttpTransport() { Stop(); }

int HttpTransport::port() const { return impl_->port; }

Status HttpTransport::Bind() {
  Impl& impl = *impl_;
  HttpOptions& options = impl.options;
  SBX_TRY(auth::CheckIssuerUrl(options.oauth));
  if (!options.oauth.issuer.empty()) {
    // libcjose is opened at its first use (auth/libcjose_on_demand.h): opened here, a host
    // without it refuses to start instead of refusing every token.
    if (std::string missing = auth::LibcjoseLoadError(); !missing.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "SANDBOX_OAUTH_ISSUER needs libcjose.so.0 (Debian: libcjose0): {}", missing);
    }
  }
  impl.downloads = std::make_unique<FileDownloads>(RandomHex(32), options.read_file,
                                                   options.replica_id, options.download_ttl);
  // Each connection is a descriptor: keep the cap where accept(2) still succeeds, with room
  // for the sandboxes' pipes and files.
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    size_t room = files.rlim_cur > 256 ? static_cast<size_t>(files.rlim_cur) - 128 : 128;
    options.max_connections = std::min(options.max_connections, room);
  }

  auto cannot_listen = [&] {
    return Fail(ErrorCode::kInvalidArgument,
                "cannot listen on {}:{} (in use, or not an address here)", options.host,
                options.port);
  };
  beast::error_code ec;
  std::string host = options.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  tcp::resolver resolver(impl.ioc);
  auto results = resolver.resolve(host.empty() ? "0.0.0.0" : host, std::to_string(options.port),
                                  tcp::resolver::passive, ec);
  if (ec || results.empty()) return cannot_listen();
  tcp::endpoint endpoint = results.begin()->endpoint();
  impl.acceptor.open(endpoint.protocol(), ec);
  if (ec) return cannot_listen();
  ::fcntl(impl.acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  // SO_REUSEADDR only: SO_REUSEPORT would let another process bind the same port and take a
  // share of the connections.
  impl.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  impl.acceptor.bind(endpoint, ec);
  if (ec) return cannot_listen();
  impl.acceptor.listen(SOMAXCONN, ec);
  if (ec) return cannot_listen();
  impl.port = impl.acceptor.local_endpoint().port();

  // Who may call: origins as configured, else the loopback names on the bound port.
  HttpAdmissionPolicy policy = AdmissionPolicyFor(options, impl.port);
  if (options.allowed_origins.empty() && IsWildcardAddress(options.host)) {
    spdlog::warn(
        "listening on {} without SANDBOX_ALLOWED_ORIGINS: Host is not checked; set "
        "SANDBOX_AUTH_TOKEN and SANDBOX_ALLOWED_ORIGINS",
        options.host);
  }
  policy.resource_server =
      auth::MakeResourceServer(options.auth_tokens, options.auth_token_names, options.oauth,
                               DefaultResourceId(options, impl.port));
  impl.admission = std::make_unique<HttpAdmission>(std::move(policy));
  return {};
}

Status HttpTransport::Serve() {
  Impl& impl = *impl_;
  if (!impl.admission) return Fail(ErrorCode::kInternal, "Serve() before Bind()");
  impl.workers = std::make_unique<WorkerPool>(std::max<size_t>(impl.options.threads, 8));
  impl.watcher = std::thread([&impl] { impl.WatchLoop(); });
  auto guard = asio::make_work_guard(impl.ioc);
  asio::post(impl.ioc, [&impl] {
    if (!impl.stopping) impl.Accept();
  });
  std::vector<std::thread> io;
  for (size_t i = 0; i < std::max<size_t>(impl.options.io_threads, 1); ++i) {
    io.emplace_back([&impl] {
      for (;;) {
        try {
          impl.ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("HTTP I/O: {}", e.what());  // one connection's fault: keep serving
        }
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(impl.stop_mutex);
    impl.stop_changed.wait(lock, [&impl] { return impl.stopping.load(); });
  }
  // Requests in flight finish (cancelled) while the I/O threads still run their writes.
  {
    std::lock_guard<std::mutex> lock(impl.watch_mutex);
    impl.watch_changed.notify_all();
  }
  if (impl.watcher.joinable()) impl.watcher.join();
  impl.workers->Shutdown();
  guard.reset();
  impl.ioc.stop();
  for (auto& thread : io) thread.join();
  return {};
}

void HttpTransport::Stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard<std::mutex> lock(impl.stop_mutex);
    if (impl.stopping.exchange(true)) return;
  }
  std::vector<std::shared_ptr<Connection>> connections = impl.sessions.All();
  {
    // Stateless modern requests have no session: cancel those in flight here.
    std::lock_guard<std::mutex> lock(impl.watch_mutex);
    for (auto& [id, entry] : impl.watched) connections.push_back(entry.connection);
  }
  for (auto& connection : connections) connection->CancelAll();
  asio::post(impl.ioc, [&impl] {
    beast::error_code ignored;
    impl.acceptor.close(ignored);
    impl.accept_retry.cancel();
  });
  impl.CloseAll();
  impl.stop_changed.notify_all();
}

std::string HttpTransport::DownloadLink(const std::string& session_id,
                                        const std::string& path) const {
  return impl_->downloads->Link("", session_id, path);
}

Result<std::string> HttpTransport::Impl::NewSession(std::shared_ptr<Connection> connection) {
  std::string id = NewTransportSessionId(options.replica_id, transport_run);
  SBX_TRY(sessions.Remember(id, std::move(connection)));
  return id;
}

Result<std::shared_ptr<Connection>> HttpTransport::Impl::AdoptSession(
    const std::string& id, std::string_view version_header, const std::string& subject) {
  auto connection = server.NewConnection();
  connection->set_run_inline(true);
  connection->set_subject(subject);
  // The initialize went to the issuer; the client's version header says what it negotiated.
  std::string version = LegacyHeaderVersion(version_header);
  connection->Adopt(IsSupportedProtocolVersion(version) ? version : kDefaultHeaderVersion);
  SBX_TRY(sessions.Remember(id, connection));
  spdlog::info(
      "adopted {} (issued by replica {}, which did not get this request, or by this "
      "replica before it restarted)",
      id, TransportIdReplica(id));
  return connection;
}

std::string HttpTransport::Impl::BaseUrl(const HttpRequestHead& head) const {
  return DownloadBaseUrl(options.public_url, head.Get("Host"),
                         ListeningAuthority(options.host, port));
}

void HttpTransport::Impl::Handle(const std::shared_ptr<HttpExchange>& conn,
                                 const HttpVerdict& verdict, const HttpRequestHead& head,
                                 std::string body, bool keep_alive) {
  const auto& cors = verdict.response.headers;
  metrics::HttpRequestInFlight in_flight;
  HttpResponse response;
  switch (verdict.route) {
    case HttpRoute::kHealth:
      response.content_type = "application/json";
      response.body = R"({"status":"ok"})";
      break;
    case HttpRoute::kReady: {
      Readiness readiness =
          JudgeReadiness(options.readiness ? options.readiness() : ReadinessFacts{});
      response.status = readiness.http_status;
      response.content_type = "application/json";
      response.headers.push_back({"Cache-Control", "no-store"});
      response.body = std::move(readiness.body);
      break;
    }
    case HttpRoute::kMetrics:
      response = {.status = 200,
                  .content_type = std::string(metrics::kTextContentType),
                  .headers = {},
                  .body = metrics::Scrape()};
      break;
    case HttpRoute::kFile: {
      // The signed link is the authority; a caller who also names itself (a bearer token)
      // reads only its own sessions' files, so another subject's link gets a plain 404.
      std::optional<ActingSubject> acting;
      if (!verdict.subject.empty()) acting.emplace(verdict.subject);
      response = downloads->Serve(head.target);
      break;
    }
    case HttpRoute::kResourceMetadata:
      // Public by design (RFC 9728 §3): a browser-based client on any origin may read it.
      response.content_type = "application/json";
      response.headers.push_back({"Access-Control-Allow-Origin", "*"});
      response.body = admission->policy().resource_server->ProtectedResourceMetadata().dump();
      break;
    case HttpRoute::kMcp:
      if (head.method == "POST") {
        return HandlePost(conn, verdict, head, std::move(body), cors, keep_alive);
      }
      if (head.method == "GET") {
        // No server-initiated messages exist here: every notification belongs to a request
        // and travels on that request's stream. The spec allows 405 for this GET.
        response.status = 405;
        response.headers.push_back({"Allow", "POST, DELETE"});
      } else if (head.method == "OPTIONS") {
        response.status = 204;
        response.headers = {{"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                            {"Access-Control-Allow-Headers",
                             "Content-Type, Authorization, Mcp-Session-Id, MCP-Protocol-Version, "
                             "Last-Event-ID, Mcp-Method, Mcp-Name, Mcp-Param-Session-Id"},
                            {"Access-Control-Max-Age", "600"}};
      } else {
        response = HandleDelete(head, verdict.subject);
      }
      break;
    case HttpRoute::kNone:
      response.status = 404;
      break;
  }
  FinishWith(*conn, std::move(response), cors, !keep_alive || stopping);
}

void HttpTransport::Impl::HandlePost(const std::shared_ptr<HttpExchange>& conn,
                                     const HttpVerdict& verdict, const HttpRequestHead& head,
                                     std::string body, const std::vector<HttpField>& cors,
                                     bool keep_alive) {
  // A request answered on this thread (initialize, 2026-07-28 requests) leaves its after-reply
  // work (the tool_call log line, a memory peak's reset) here: it runs as this returns, once
  // the response is written.
  AfterReply after_reply;
  auto send = [&](HttpResponse response) {
    FinishWith(*conn, std::move(response), cors, !keep_alive || stopping);
  };
  auto parsed = ParseMessageJson(body);
  // The parsed value is all we need: free the upload before any tool runs.
  std::string().swap(body);
  if (!parsed) return send(JsonErrorResponse(400, kParseError, parsed.error()));
  Json& value = *parsed;

  std::string session_id(head.Get(kSessionHeader));
  HttpPostEra era = DecidePostEra(head.Get(kVersionHeader), session_id, value);
  if (era == HttpPostEra::kModern) {
    return HandleModernPost(conn, verdict, head, std::move(value), cors, keep_alive);
  }
  if (era == HttpPostEra::kSessionless) {
    return send(JsonErrorResponse(400, kTransportError,
                                  "Bad Request: Mcp-Session-Id header is required (initialize "
                                  "first, or send 2026-07-28 requests with params._meta)"));
  }
  bool initialize = IsInitializeRequest(value);
  std::shared_ptr<Connection> connection;
  bool new_session = era == HttpPostEra::kOpenSession;
  if (new_session) {
    connection = server.NewConnection();
    connection->set_run_inline(true);  // this worker thread waits for the answer anyway
    connection->set_subject(verdict.subject);
  } else {
    connection = sessions.Find(session_id, verdict.subject);
    if (!connection && JudgeUnknownTransportId(session_id, options.replica_id, transport_run) ==
                           UnknownTransportId::kAdopt) {
      auto adopted = AdoptSession(session_id, head.Get(kVersionHeader), verdict.subject);
      if (!adopted) {
        return send(JsonErrorResponse(503, kTransportError, adopted.error().message));
      }
      connection = std::move(*adopted);
    }
    if (!connection) {
      return send(
          JsonErrorResponse(404, kTransportSessionNotFound,
                            "Session not found: it ended or expired; initialize a new one"));
    }
  }
  if (!initialize) {
    std::string version = LegacyHeaderVersion(head.Get(kVersionHeader));
    if (!IsSupportedProtocolVersion(version)) {
      return send(JsonErrorResponse(
          400, kTransportError,
          fmt::format("Bad Request: unsupported MCP-Protocol-Version {}", Quoted(version))));
    }
  }

  std::string base = BaseUrl(head);
  connection->set_download_linker([this, base](const std::string& sid, const std::string& path) {
    return downloads->Link(base, sid, path);
  });

  auto reply = std::make_shared<PostReply>();
  // Moved, not copied: what the call needs it takes (an upload's content), and nothing of the
  // request stays here while a stream runs.
  connection->Handle(std::move(value), reply);

  if (!new_session) {
    return SendReply(*conn, *reply, cors, {.keep_alive = keep_alive, .modern = false}, stopping,
                     [&connection] { connection->CancelAll(); });
  }
  // initialize: the session exists once it succeeded (and its answer is always whole).
  reply->WaitWhole(stopping);
  auto messages = reply->TakeAll();
  HttpResponse response;
  auto answer = messages.size() == 1 ? ParseJson(messages.front()) : std::nullopt;
  if (answer && answer->is_object() && answer->contains("result")) {
    auto id = NewSession(connection);
    if (!id) return send(JsonErrorResponse(503, kTransportError, id.error().message));
    response.headers.push_back({kSessionHeader, *id});
  }
  if (messages.empty()) {
    response.status = 202;
  } else {
    response.content_type = "application/json";
    response.body = std::move(messages.front());
  }
  send(std::move(response));
}

void HttpTransport::Impl::HandleModernPost(const std::shared_ptr<HttpExchange>& conn,
                                           const HttpVerdict& verdict, const HttpRequestHead& head,
                                           Json value, const std::vector<HttpField>& cors,
                                           bool keep_alive) {
  auto send = [&](int status, const Json& message) {
    HttpResponse response;
    response.status = status;
    response.content_type = "application/json";
    response.body = Serialize(message);
    FinishWith(*conn, std::move(response), cors, !keep_alive || stopping);
  };
  if (!value.is_object()) {
    return send(400, MakeErrorResponse(nullptr, kInvalidRequest,
                                       "Invalid Request: one JSON-RPC message per POST (protocol "
                                       "revision 2026-07-28 has no batches or sessions)"));
  }
  bool request = value.contains("id") && value.contains("method");
  if (request) {
    Json id = value["id"].is_string() || value["id"].is_number_integer() ? value["id"] : Json();
    const Json no_params = Json::object();
    const Json& params = value.contains("params") ? value["params"] : no_params;
    // _meta first: a request without its revision is malformed (-32602) before it can
    // mismatch a header.
    if (auto meta = ReadModernMeta(params); !meta) {
      return send(400, MakeErrorResponse(id, kInvalidParams, meta.error()));
    }
    Json schema;
    if (value["method"] == "tools/call" && params.is_object() && params.contains("name") &&
        params["name"].is_string()) {
      if (const Tool* tool = server.FindTool(params["name"].get<std::string>())) {
        schema = tool->input_schema;
      }
    }
    if (auto mismatch = CheckRequestHeaders(head, value, schema)) {
      return send(400, MakeErrorResponse(id, kHeaderMismatch,
                                         fmt::format("Header mismatch: {}", *mismatch)));
    }
  }
  auto connection = server.NewConnection();
  connection->set_subject(verdict.subject);
  connection->set_modern_only(true);
  connection->set_run_inline(true);  // as a legacy session: this thread waits anyway
  std::string base = BaseUrl(head);
  connection->set_download_linker([this, base](const std::string& sid, const std::string& path) {
    return downloads->Link(base, sid, path);
  });
  auto reply = std::make_shared<PostReply>();
  auto gone = std::make_shared<std::atomic<bool>>(false);
  uint64_t watch = Watch({conn, connection, gone});
  connection->Handle(std::move(value), reply);
  Unwatch(watch);
  if (*gone) {  // cancelled by the client closing the stream: nothing is sent
    reply->Detach();
    return conn->PostClose();
  }
  SendReply(*conn, *reply, cors, {.keep_alive = keep_alive, .modern = true}, stopping,
            [&connection] { connection->CancelAll(); });
}

uint64_t HttpTransport::Impl::Watch(Watched entry) {
  std::lock_guard<std::mutex> lock(watch_mutex);
  uint64_t id = next_watch++;
  watched.emplace(id, std::move(entry));
  return id;
}

void HttpTransport::Impl::Unwatch(uint64_t id) {
  std::lock_guard<std::mutex> lock(watch_mutex);
  watched.erase(id);
}

void HttpTransport::Impl::WatchLoop() {
  std::unique_lock<std::mutex> lock(watch_mutex);
  while (!stopping) {
    watch_changed.wait_for(lock, 100ms);
    std::vector<Watched> now;
    for (auto& [id, entry] : watched) {
      if (!*entry.gone) now.push_back(entry);
    }
    lock.unlock();
    for (auto& entry : now) {
      if (entry.exchange->PeerGone()) {
        spdlog::debug("client closed the response stream: request cancelled");
        *entry.gone = true;
        entry.connection->CancelAll();
      }
    }
    lock.lock();
  }
}

HttpResponse HttpTransport::Impl::HandleDelete(const HttpRequestHead& head,
                                               const std::string& subject) {
  std::string session_id(head.Get(kSessionHeader));
  if (session_id.empty()) {
    return JsonErrorResponse(400, kTransportError,
                             "Bad Request: Mcp-Session-Id header is required");
  }
  std::shared_ptr<Connection> connection = sessions.Remove(session_id, subject);
  if (!connection) return JsonErrorResponse(404, kTransportSessionNotFound, "Session not found");
  connection->CancelAll();
  HttpResponse response;
  response.status = 200;
  return response;
}

}  // namespace sandbox::mcp
