#include "mcp/http_transport.h"

#include <httplib.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"

namespace sandbox::mcp {

namespace {

using namespace std::chrono_literals;

constexpr char kSessionHeader[] = "Mcp-Session-Id";
constexpr char kVersionHeader[] = "MCP-Protocol-Version";
// Requests without the version header are taken to speak 2025-03-26 (basic/transports).
constexpr char kDefaultHeaderVersion[] = "2025-03-26";
constexpr auto kKeepAliveInterval = 15s;  // SSE comment, so dead clients are noticed

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// "host:port" / "[v6]:port" -> "host" / "[v6]" (lower-case).
std::string HostName(const std::string& host_header) {
  std::string host = Lower(host_header);
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return close == std::string::npos ? host : host.substr(0, close + 1);
  }
  auto colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

bool IsLoopbackName(const std::string& name) {
  return name == "localhost" || name == "127.0.0.1" || name == "[::1]" || name == "::1";
}

bool IsWildcardAddress(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" || host.empty();
}

// Compares secrets in time independent of where they differ (hashes first, so the length
// does not leak either).
bool SecretEquals(const std::string& given, const std::string& expected) {
  unsigned char a[EVP_MAX_MD_SIZE];
  unsigned char b[EVP_MAX_MD_SIZE];
  unsigned int a_len = 0;
  unsigned int b_len = 0;
  EVP_Digest(given.data(), given.size(), a, &a_len, EVP_sha256(), nullptr);
  EVP_Digest(expected.data(), expected.size(), b, &b_len, EVP_sha256(), nullptr);
  return a_len == b_len && CRYPTO_memcmp(a, b, a_len) == 0;
}

void SetJsonError(httplib::Response& response, int status, int code, const std::string& message) {
  response.status = status;
  response.set_content(Serialize(MakeErrorResponse(nullptr, code, message)), "application/json");
}

// A header lists a media type (or */* or type/*).
bool Accepts(const std::string& accept, const std::string& type) {
  std::string value = Lower(accept);
  if (value.find(type) != std::string::npos || value.find("*/*") != std::string::npos) return true;
  return value.find(type.substr(0, type.find('/')) + "/*") != std::string::npos;
}

// The reply to one POST: collects what the dispatcher sends and hands it to the HTTP response,
// either whole (JSON) or as it comes (SSE).
class PostReply : public Reply {
 public:
  void Send(const Json& message) override {
    std::string line = Serialize(message);
    std::lock_guard<std::mutex> lock(mutex_);
    if (detached_) return;
    if (queue_.empty() && !notified_) notified_ = message.is_object() && message.contains("method");
    queue_.push_back(std::move(line));
    changed_.notify_all();
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }
  // Waits until the answer is complete (true: it can go out as one JSON body) or a
  // notification comes first (false: it needs an SSE stream). Gives up (false) on `stop`.
  bool WaitWhole(const std::atomic<bool>& stop) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (closed_) return true;
      if (notified_ || stop) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(250));
    }
  }
  std::deque<std::string> TakeAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(queue_, {});
  }
  enum class Next { kMessage, kDone, kIdle };
  // Waits up to `wait` for the next message, or the end of the stream.
  Next Pop(std::string* message, std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, wait, [this] { return !queue_.empty() || closed_; });
    if (!queue_.empty()) {
      *message = std::move(queue_.front());
      queue_.pop_front();
      return Next::kMessage;
    }
    return closed_ ? Next::kDone : Next::kIdle;
  }
  // The client went away: drop what is still to come (a disconnect is not a cancel).
  void Detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    detached_ = true;
    queue_.clear();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  bool closed_ = false;
  bool detached_ = false;
  bool notified_ = false;  // the first message was a notification
};

std::string SseEvent(const std::string& data) { return "event: message\ndata: " + data + "\n\n"; }

}  // namespace

Result<std::string> RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailSys("getrandom");
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes * 2);
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

HttpTransport::HttpTransport(Server& server, HttpOptions options)
    : server_(server), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {}

HttpTransport::~HttpTransport() { Stop(); }

Status HttpTransport::Bind() {
  SBX_ASSIGN_OR_RETURN(token_key_, RandomHex(32));
  size_t threads = std::max<size_t>(options_.threads, 8);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_tcp_nodelay(true);  // one small message per write: no Nagle delay
  http_->set_keep_alive_max_count(100000);
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  // The library listens with a backlog of 5: fifty clients connecting at once would have their
  // SYNs dropped and retried a second later. Keep the listening socket to widen the queue after
  // the bind; SO_REUSEADDR only (the library's default adds SO_REUSEPORT, which would let
  // another process bind the same port and take a share of the connections).
  int listen_fd = -1;
  http_->set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd = sock;
  });

  http_->Post("/mcp",
              [this](const httplib::Request& q, httplib::Response& r) { HandlePost(q, r); });
  http_->Delete("/mcp",
                [this](const httplib::Request& q, httplib::Response& r) { HandleDelete(q, r); });
  http_->Get("/mcp", [this](const httplib::Request& q, httplib::Response& r) {
    if (!Admit(q, r, true)) return;
    // No server-initiated messages exist here: every notification belongs to a request and
    // travels on that request's stream. The spec allows 405 for this GET.
    r.status = 405;
    r.set_header("Allow", "POST, DELETE");
  });
  http_->Options("/mcp", [this](const httplib::Request& q, httplib::Response& r) {
    if (!Admit(q, r, true)) return;
    r.status = 204;
    r.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
    r.set_header(
        "Access-Control-Allow-Headers",
        "Content-Type, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID");
    r.set_header("Access-Control-Max-Age", "600");
  });
  http_->Get("/healthz", [this](const httplib::Request& q, httplib::Response& r) {
    if (!Admit(q, r, false)) return;
    r.set_content(R"({"status":"ok"})", "application/json");
  });
  http_->Get(R"(/files/([^/]+)/(.+))",
             [this](const httplib::Request& q, httplib::Response& r) { HandleFile(q, r); });

  bool bound = false;
  if (options_.port == 0) {
    int port = http_->bind_to_any_port(options_.host);
    bound = port > 0;
    port_ = port;
  } else {
    bound = http_->bind_to_port(options_.host, options_.port);
    port_ = options_.port;
  }
  if (!bound) {
    return Fail(ErrorCode::kInvalidArgument,
                "cannot listen on {}:{} (in use, or not an address here)", options_.host,
                options_.port);
  }
  if (listen_fd >= 0 && ::listen(listen_fd, SOMAXCONN) != 0) {
    spdlog::warn("cannot widen the listen backlog: {}", std::strerror(errno));
  }
  // The callback above refers to this frame: leave one behind that does not.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });

  // Who may call: origins as configured, else the loopback names on the bound port.
  for (const auto& origin : options_.allowed_origins) {
    if (origin == "*") {
      any_host_ = true;
      origins_.push_back("*");
      continue;
    }
    origins_.push_back(Lower(origin));
    extra_hosts_.push_back(HostName(origin.substr(origin.find("://") + 3)));
  }
  if (options_.allowed_origins.empty()) {
    for (const char* name : {"localhost", "127.0.0.1", "[::1]"}) {
      origins_.push_back(fmt::format("http://{}:{}", name, port_));
    }
    if (IsWildcardAddress(options_.host)) {
      // Remote clients reach us under names we cannot know: the Host check cannot hold.
      any_host_ = true;
      spdlog::warn(
          "listening on {} without SANDBOX_ALLOWED_ORIGINS: Host is not checked; set "
          "SANDBOX_AUTH_TOKEN and SANDBOX_ALLOWED_ORIGINS",
          options_.host);
    }
  }
  if (!IsWildcardAddress(options_.host)) {
    extra_hosts_.push_back(
        Lower(options_.host.find(':') != std::string::npos && options_.host.front() != '['
                  ? "[" + options_.host + "]"
                  : options_.host));
  }
  return {};
}

Status HttpTransport::Serve() {
  if (!http_->listen_after_bind() && !stopping_) {
    return Fail(ErrorCode::kInternal, "the HTTP server stopped unexpectedly");
  }
  return {};
}

void HttpTransport::Stop() {
  if (stopping_.exchange(true)) return;
  std::vector<std::shared_ptr<Connection>> connections;
  {
    std::lock_guard<std::mutex> lock(sessions_mutex_);
    for (auto& [id, session] : sessions_) connections.push_back(session.connection);
  }
  for (auto& connection : connections) connection->CancelAll();
  if (http_) http_->stop();
}

std::string HttpTransport::DownloadToken(const std::string& session_id) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), token_key_.data(), static_cast<int>(token_key_.size()),
       reinterpret_cast<const unsigned char*>(session_id.data()), session_id.size(), mac, &mac_len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < 16 && i < mac_len; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

bool HttpTransport::HostAllowed(const std::string& host_header) const {
  if (any_host_ || host_header.empty()) return true;
  std::string name = HostName(host_header);
  if (IsLoopbackName(name)) return true;
  return std::find(extra_hosts_.begin(), extra_hosts_.end(), name) != extra_hosts_.end();
}

bool HttpTransport::OriginAllowed(const std::string& origin) const {
  std::string value = Lower(origin);
  while (!value.empty() && value.back() == '/') value.pop_back();
  for (const auto& allowed : origins_) {
    if (allowed == "*" || allowed == value) return true;
  }
  return false;
}

bool HttpTransport::Admit(const httplib::Request& request, httplib::Response& response,
                          bool mcp_endpoint) {
  if (!HostAllowed(request.get_header_value("Host"))) {
    SetJsonError(response, 403, -32000, "Forbidden: Host not allowed (DNS rebinding protection)");
    return false;
  }
  if (!mcp_endpoint) return true;
  std::string origin = request.get_header_value("Origin");
  if (!origin.empty()) {
    if (!OriginAllowed(origin)) {
      SetJsonError(response, 403, -32000,
                   "Forbidden: Origin not allowed (see SANDBOX_ALLOWED_ORIGINS)");
      return false;
    }
    response.set_header("Access-Control-Allow-Origin", origin);
    response.set_header("Vary", "Origin");
    response.set_header("Access-Control-Expose-Headers", "Mcp-Session-Id");
  }
  if (!options_.auth_token.empty() && request.method != "OPTIONS") {
    std::string authorization = request.get_header_value("Authorization");
    constexpr std::string_view kBearer = "bearer ";
    bool ok = authorization.size() > kBearer.size() &&
              Lower(authorization.substr(0, kBearer.size())) == kBearer &&
              SecretEquals(authorization.substr(kBearer.size()), options_.auth_token);
    if (!ok) {
      response.set_header("WWW-Authenticate", R"(Bearer realm="mcp-sandbox")");
      SetJsonError(response, 401, -32000, "Unauthorized: a valid bearer token is required");
      return false;
    }
  }
  return true;
}

std::shared_ptr<Connection> HttpTransport::FindSession(const std::string& id) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second.last_used = std::chrono::steady_clock::now();
  return it->second.connection;
}

void HttpTransport::ExpireSessions() {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used > options_.session_idle_ttl &&
        it->second.connection->in_flight() == 0) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<std::string> HttpTransport::NewSession(std::shared_ptr<Connection> connection) {
  ExpireSessions();
  SBX_ASSIGN_OR_RETURN(std::string id, RandomHex(16));
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  if (sessions_.size() >= options_.max_mcp_sessions) {
    // Make room by forgetting the least recently used idle session.
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.connection->in_flight() > 0) continue;
      if (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used) oldest = it;
    }
    if (oldest == sessions_.end()) {
      return Fail(ErrorCode::kMaxSessions, "too many MCP sessions are busy");
    }
    sessions_.erase(oldest);
  }
  sessions_[id] = McpSession{std::move(connection), std::chrono::steady_clock::now()};
  return id;
}

std::string HttpTransport::BaseUrl(const httplib::Request& request) const {
  std::string host = request.get_header_value("Host");
  if (host.empty()) {
    host = options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host;
    host += ":" + std::to_string(port_);
  }
  return "http://" + host;
}

void HttpTransport::HandlePost(const httplib::Request& request, httplib::Response& response) {
  if (!Admit(request, response, true)) return;
  if (!Accepts(request.get_header_value("Accept"), "application/json") ||
      !Accepts(request.get_header_value("Accept"), "text/event-stream")) {
    return SetJsonError(response, 406, -32000,
                        "Not Acceptable: Accept must list application/json and text/event-stream");
  }
  std::string content_type = Lower(request.get_header_value("Content-Type"));
  if (content_type.rfind("application/json", 0) != 0) {
    return SetJsonError(response, 415, -32000,
                        "Unsupported Media Type: Content-Type must be application/json");
  }
  auto body = ParseJson(request.body);
  if (!body) return SetJsonError(response, 400, kParseError, "Parse error: the body is not JSON");
  const Json& value = *body;

  bool initialize = value.is_object() && value.contains("id") && value.contains("method") &&
                    value["method"] == "initialize";
  std::string session_id = request.get_header_value(kSessionHeader);
  std::shared_ptr<Connection> connection;
  bool new_session = false;
  if (!session_id.empty()) {
    connection = FindSession(session_id);
    if (!connection) {
      return SetJsonError(response, 404, -32001,
                          "Session not found: it ended or expired; initialize a new one");
    }
  } else if (initialize) {
    connection = server_.NewConnection();
    connection->set_run_inline(true);  // this handler thread waits for the answer anyway
    new_session = true;
  } else {
    return SetJsonError(response, 400, -32000,
                        "Bad Request: Mcp-Session-Id header is required (initialize first)");
  }
  if (!initialize) {
    std::string version = request.get_header_value(kVersionHeader);
    if (version.empty()) version = kDefaultHeaderVersion;
    if (!IsSupportedProtocolVersion(version)) {
      return SetJsonError(
          response, 400, -32000,
          fmt::format("Bad Request: unsupported MCP-Protocol-Version {}", ValidUtf8(version)));
    }
  }

  std::string base = BaseUrl(request);
  connection->set_download_linker(
      [this, base](const std::string& sid, const std::string& path) -> std::string {
        constexpr std::string_view kData = "/mnt/data/";
        if (!options_.read_file || path.rfind(kData, 0) != 0 || path.size() == kData.size()) {
          return "";
        }
        return fmt::format("{}/files/{}/{}?token={}", base, sid,
                           PercentEncodePath(path.substr(kData.size())), DownloadToken(sid));
      });

  auto reply = std::make_shared<PostReply>();
  connection->Handle(value, reply);

  // A plain JSON body when the answer comes whole (most calls: no progress token, no log
  // message); an SSE stream as soon as a notification has to go out before the response.
  if (reply->WaitWhole(stopping_)) {
    auto messages = reply->TakeAll();
    if (new_session) {
      auto parsed = messages.size() == 1 ? ParseJson(messages.front()) : std::nullopt;
      bool ok = parsed && parsed->is_object() && parsed->contains("result");
      if (ok) {
        auto id = NewSession(connection);
        if (!id) return SetJsonError(response, 503, -32000, id.error().message);
        response.set_header(kSessionHeader, *id);
      }
    }
    if (messages.empty()) {
      response.status = 202;  // notifications and responses only
      return;
    }
    if (messages.size() == 1) {
      response.set_content(messages.front(), "application/json");
      return;
    }
    std::string events;
    for (const auto& message : messages) events += SseEvent(message);
    response.set_header("Cache-Control", "no-cache");
    response.set_content(events, "text/event-stream");
    return;
  }

  // Notifications first: stream them, then the response, as SSE.
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider(
      "text/event-stream",
      [this, reply](size_t /*offset*/, httplib::DataSink& sink) {
        auto idle_since = std::chrono::steady_clock::now();
        std::string message;
        for (;;) {
          switch (reply->Pop(&message, 250ms)) {
            case PostReply::Next::kMessage: {
              std::string event = SseEvent(message);
              return sink.write(event.data(), event.size());
            }
            case PostReply::Next::kDone:
              sink.done();
              return true;
            case PostReply::Next::kIdle:
              if (stopping_) {
                sink.done();
                return true;
              }
              if (std::chrono::steady_clock::now() - idle_since >= kKeepAliveInterval) {
                static constexpr char kComment[] = ": keep-alive\n\n";
                return sink.write(kComment, sizeof kComment - 1);
              }
              break;
          }
        }
      },
      [reply](bool /*success*/) { reply->Detach(); });
}

void HttpTransport::HandleDelete(const httplib::Request& request, httplib::Response& response) {
  if (!Admit(request, response, true)) return;
  std::string session_id = request.get_header_value(kSessionHeader);
  if (session_id.empty()) {
    return SetJsonError(response, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
  }
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard<std::mutex> lock(sessions_mutex_);
    auto it = sessions_.find(session_id);
    if (it != sessions_.end()) {
      connection = it->second.connection;
      sessions_.erase(it);
    }
  }
  if (!connection) return SetJsonError(response, 404, -32001, "Session not found");
  connection->CancelAll();
  response.status = 200;
}

void HttpTransport::HandleFile(const httplib::Request& request, httplib::Response& response) {
  if (!Admit(request, response, false)) return;
  auto not_found = [&] {
    response.status = 404;
    response.set_content("not found\n", "text/plain");
  };
  if (!options_.read_file || request.matches.size() < 3) return not_found();
  std::string session_id = request.matches[1];
  std::string relative = request.matches[2];
  std::string token = request.get_param_value("token");
  if (token.empty() || !SecretEquals(token, DownloadToken(session_id))) {
    response.status = 403;
    response.set_content("a valid token is required (use the download_url of a tool result)\n",
                         "text/plain");
    return;
  }
  // The agent confines paths to the sandbox; refuse traversal here too, so a URL can only
  // name a file below /mnt/data.
  size_t start = 0;
  while (start <= relative.size()) {
    size_t slash = relative.find('/', start);
    std::string part =
        relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos) {
      response.status = 400;
      response.set_content("invalid path\n", "text/plain");
      return;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  auto file = options_.read_file(session_id, "/mnt/data/" + relative);
  if (!file) {
    switch (file.error().code) {
      case ErrorCode::kNotFound:
      case ErrorCode::kSessionNotFound:
      case ErrorCode::kInvalidSessionId:
        return not_found();
      case ErrorCode::kSessionBusy:
        response.status = 409;
        response.set_header("Retry-After", "1");
        response.set_content("the session is running a call; try again when it finished\n",
                             "text/plain");
        return;
      case ErrorCode::kArtifactTooLarge:
        response.status = 413;
        response.set_content(ValidUtf8(file.error().message) + "\n", "text/plain");
        return;
      case ErrorCode::kInvalidPath:
        response.status = 400;
        response.set_content("invalid path\n", "text/plain");
        return;
      default:
        spdlog::warn("download {} of {}: {}", LogSafe(relative, 200), LogSafe(session_id),
                     file.error().message);
        response.status = 500;
        response.set_content("the file could not be read\n", "text/plain");
        return;
    }
  }
  std::string mime = file->mime_type.empty() ? "application/octet-stream" : file->mime_type;
  // Files come from sandboxed code: never let one run script in our origin (CSP sandbox gives
  // it an opaque origin), never let the browser guess a type, and download what is not an
  // image or plain data.
  response.set_header("Content-Security-Policy", "sandbox; default-src 'none'");
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("Cache-Control", "no-store");
  std::string name = relative.substr(relative.rfind('/') + 1);
  std::string quoted;
  for (char c : name)
    quoted += (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) ? '_' : c;
  bool inline_ok = mime.rfind("image/", 0) == 0 && mime != "image/svg+xml";
  inline_ok = inline_ok || mime == "text/plain" || mime == "text/csv" ||
              mime == "application/json" || mime == "application/pdf";
  response.set_header(
      "Content-Disposition",
      fmt::format("{}; filename=\"{}\"", inline_ok ? "inline" : "attachment", quoted));
  response.set_content(std::move(file->content), mime);
}

}  // namespace sandbox::mcp
