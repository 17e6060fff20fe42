// The MCP dispatcher. Server holds what every client shares (tools, resources, the worker
// pool); Connection is one client's protocol state (the stdio process, or one HTTP
// Mcp-Session-Id): lifecycle and version negotiation, log level, requests in flight.
// Transports hand parsed JSON to Connection::Handle and get messages back through a Reply.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/jsonrpc.h"
#include "mcp/protocol_era.h"
#include "mcp/resource_subscriptions.h"
#include "mcp/resources.h"
#include "mcp/tool.h"
#include "mcp/worker_pool.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

// Protocol revisions this server speaks, oldest first; the last is the one offered when a
// client asks for a revision we do not know.
inline constexpr std::string_view kProtocolVersions[] = {"2025-03-26", "2025-06-18", "2025-11-25"};
inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
bool IsSupportedProtocolVersion(std::string_view version);

// Where the messages caused by one client message go: notifications tied to a request
// (progress, log), then its response. Close() comes last, exactly once, also when there is
// nothing to send (a notification, a cancelled request). Implementations are thread-safe.
class Reply {
 public:
  virtual ~Reply() = default;
  virtual void Send(const Json& message) = 0;
  virtual void Close() = 0;
  // The _meta of a modern (2026-07-28) request, which travels with its reply to whatever
  // serves it (log level, client capabilities); null for a legacy-era request.
  virtual const ModernRequestMeta* modern() const { return nullptr; }
};

struct ServerOptions {
  std::string name = "mcp-sandbox";
  std::string title = "Python sandbox";
  std::string version = "0.0.0";
  std::string instructions;
  size_t worker_threads = 16;
  // Session files as resources (resources/*, completion/complete); null: neither capability.
  std::shared_ptr<ResourceProvider> resources;
  // Tools that produce MCP Apps views (mcp/apps/): listed and callable, with the ui:// resources,
  // only for a client that declares the io.modelcontextprotocol/ui extension.
  std::vector<Tool> ui_tools;
};

class Connection;

class Server {
 public:
  Server(ServerOptions options, std::vector<Tool> tools);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::shared_ptr<Connection> NewConnection();

  // Stops taking tool calls and waits for those in flight to finish. Cancel them first (or
  // close the sessions they run in) when they must not run to the end.
  void Shutdown();

  const ServerOptions& options() const { return options_; }
  // `ui`: the client declared the MCP Apps extension, so the view tools are there too.
  const Tool* FindTool(std::string_view name, bool ui = false) const;
  const Json& tools_list(bool ui = false) const { return ui ? tools_list_ui_ : tools_list_; }

 private:
  friend class Connection;
  bool Submit(std::function<void()> task) { return pool_.Submit(std::move(task)); }

  ServerOptions options_;
  std::vector<Tool> tools_;
  Json tools_list_;     // the tools/list result, built once
  Json tools_list_ui_;  // the same with the view tools, for clients with the MCP Apps extension
  WorkerPool pool_;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(Server& server);

  // Handles one JSON value from the client: a message, or (2025-03-26 only) a batch array.
  // Fast methods reply before returning; tool calls reply later from a worker thread (or
  // before returning, with set_run_inline). Takes the value by value: its strings (an upload's
  // content) are moved on to the tool, never copied.
  void Handle(Json value, const std::shared_ptr<Reply>& reply);

  // Run tool calls on the calling thread instead of the worker pool: for transports that
  // give each request a thread of its own (HTTP), which saves two thread hand-offs per call.
  // Calls with a progressToken still go to the pool, so progress streams while they run. The
  // stdio reader must stay free for ping and cancellation, so it keeps the pool.
  void set_run_inline(bool run_inline) { run_inline_ = run_inline; }

  // Serve every request by the 2026-07-28 rules, also one without per-request _meta (which is
  // then refused): for the stateless HTTP requests, which have no initialize to fall back on.
  void set_modern_only(bool modern_only) { modern_only_ = modern_only; }

  // Cancels every request in flight; none of them will be answered. For a closing client.
  void CancelAll();

  // The negotiated revision, or "" before initialize.
  std::string protocol_version() const;
  // The revision of a transport session adopted from another replica, whose initialize this
  // server never saw (mcp/transport_session_id.h): what the client's MCP-Protocol-Version says.
  void Adopt(const std::string& protocol_version);
  // Makes download URLs for results (set by the HTTP transport; unset = no downloads).
  using DownloadLinker =
      std::function<std::string(const std::string& session_id, const std::string& path)>;
  void set_download_linker(DownloadLinker linker);
  std::string DownloadUrl(const std::string& session_id, const std::string& path) const;
  // Who this client is (HTTP: the subject its bearer token names, mcp/auth/): its calls act as
  // that subject (runtime/session/session_owner.h) and see only its sessions. Set before the
  // first Handle; unset (stdio): no filtering.
  void set_subject(std::string subject) { subject_ = std::move(subject); }
  const std::optional<std::string>& subject() const { return subject_; }
  // How many requests are being worked on (HTTP keeps a session with work in flight).
  size_t in_flight() const;

 private:
  struct InFlight;
  class Call;

  void HandleMessage(Json value, const std::shared_ptr<Reply>& reply, bool in_batch);
  void HandleRequest(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void HandleNotification(const Message& message);
  // A request of the 2026-07-28 era: _meta checked, removed methods refused, results
  // decorated (mcp/protocol_era.h); then the same handlers as the legacy era.
  void HandleModernRequest(Message& message, const std::shared_ptr<Reply>& reply);
  Json Initialize(const Json& params);
  Json Capabilities(bool modern, bool ui) const;
  // Whether the client behind this request declared the MCP Apps extension: a modern request in
  // its own _meta, a legacy one in initialize.
  bool DeclaresUi(const Reply& reply) const;

  // One handler per request method, bound by name in a table (server.cc, Connection::Methods), as
  // clangd binds its LSP methods: a new method is one entry and one function.
  using MethodHandler = void (Connection::*)(Message& message, const std::shared_ptr<Reply>& reply,
                                             bool in_batch);
  struct MethodEntry {
    MethodHandler handler;
    bool needs_resources;  // served only when the server reads resources
  };
  static const std::unordered_map<std::string_view, MethodEntry>& Methods();
  void OnInitialize(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnDiscover(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnPromptsList(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnPromptsGet(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnPing(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnSetLogLevel(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnToolsList(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnToolsCall(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnResourcesList(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnResourceTemplatesList(Message& message, const std::shared_ptr<Reply>& reply,
                               bool in_batch);
  void OnResourcesRead(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  // resources/subscribe, resources/unsubscribe and completion/complete (resource_methods.cc).
  void OnResourcesSubscribe(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnResourcesUnsubscribe(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  void OnComplete(Message& message, const std::shared_ptr<Reply>& reply, bool in_batch);
  // After a tool call that may have written files: notifications/resources/updated on `reply`
  // (ahead of the call's response) for each subscribed resource that changed.
  void SendResourceUpdates(Reply& reply);

  void StartToolCall(Message& message, const std::shared_ptr<Reply>& reply);
  // Registers a request in flight and runs `work` on the pool (or inline, see
  // set_run_inline, unless it `streams` progress that must reach the client while it runs);
  // work returns the response.
  void RunAsync(const Message& message, const std::shared_ptr<Reply>& reply,
                std::function<Json(const std::shared_ptr<InFlight>&)> work, bool streams = false);

  Server& server_;
  mutable std::mutex mutex_;
  std::string protocol_version_;
  DownloadLinker download_linker_;
  std::unordered_map<std::string, std::shared_ptr<InFlight>> in_flight_;
  std::atomic<int> log_level_{1};                         // LogLevel::kInfo until logging/setLevel
  std::unique_ptr<ResourceSubscriptions> subscriptions_;  // null without resources
  bool run_inline_ = false;
  bool modern_only_ = false;
  std::atomic<bool> ui_{false};  // initialize declared the MCP Apps extension
  std::optional<std::string> subject_;
};

}  // namespace sandbox::mcp
