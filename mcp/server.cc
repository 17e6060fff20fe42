#include "mcp/server.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "mcp/apps/ui_extension.h"
#include "mcp/progress.h"
#include "mcp/schema_check.h"
#include "mcp/tool_result.h"
#include "mcp/trace_context.h"
#include "runtime/base/after_reply.h"
#include "runtime/base/log_fields.h"
#include "runtime/base/quoted.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/session_owner.h"

namespace sandbox::mcp {

namespace {

constexpr std::string_view kLogLevelNames[] = {"debug", "info",     "notice", "warning",
                                               "error", "critical", "alert",  "emergency"};

// Collects the responses of a 2025-03-26 batch and sends them as one array when every element
// is done; notifications tied to its requests pass straight through.
class BatchReply : public std::enable_shared_from_this<BatchReply> {
 public:
  BatchReply(std::shared_ptr<Reply> outer, size_t count)
      : outer_(std::move(outer)), pending_(count) {}

  std::shared_ptr<Reply> Element() {
    class ElementReply : public Reply {
     public:
      explicit ElementReply(std::shared_ptr<BatchReply> batch) : batch_(std::move(batch)) {}
      void Send(const Json& message) override {
        if (message.contains("method")) {
          batch_->outer_->Send(message);
        } else {
          std::lock_guard<std::mutex> lock(batch_->mutex_);
          batch_->responses_.push_back(message);
        }
      }
      void Close() override { batch_->ElementDone(); }

     private:
      std::shared_ptr<BatchReply> batch_;
    };
    return std::make_shared<ElementReply>(shared_from_this());
  }

 private:
  void ElementDone() {
    Json responses;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ > 0) return;
      responses = std::move(responses_);
    }
    if (!responses.empty()) outer_->Send(responses);
    outer_->Close();
  }

  std::shared_ptr<Reply> outer_;
  std::mutex mutex_;
  size_t pending_;
  Json responses_ = Json::array();
};

// The reply of a modern request: every result it carries gets what the 2026-07-28 revision
// puts on results (resultType, serverInfo, cache hints); notifications pass through.
class ModernReply : public Reply {
 public:
  ModernReply(std::shared_ptr<Reply> outer, ModernRequestMeta meta, std::string method,
              Json server_info)
      : outer_(std::move(outer)),
        meta_(std::move(meta)),
        method_(std::move(method)),
        server_info_(std::move(server_info)) {}
  void Send(const Json& message) override {
    auto result = message.find("result");
    // Already decorated (Decorate, by a handler that owns its result): no copy.
    if (result == message.end() || !result->is_object() || result->contains("resultType")) {
      return outer_->Send(message);
    }
    Json decorated = message;
    DecorateModernResult(method_, server_info_, decorated["result"]);
    outer_->Send(decorated);
  }
  // For a handler that builds a large result (a tool call's images): decorates it in place, so
  // Send need not copy it.
  void Decorate(Json& result) const { DecorateModernResult(method_, server_info_, result); }
  void Close() override { outer_->Close(); }
  const ModernRequestMeta* modern() const override { return &meta_; }

 private:
  std::shared_ptr<Reply> outer_;
  ModernRequestMeta meta_;
  std::string method_;
  Json server_info_;
};

// The structured fields of every line logged while a tool call runs (log_fields.h): the tool,
// the session it names, the request id and the client's traceparent.
LogFields CallLogFields(const Tool& tool, const Json& arguments, const Json& id,
                        std::string traceparent) {
  auto session = arguments.find("session_id");
  return {.event = "",
          .session_id = session != arguments.end() && session->is_string()
                            ? session->get<std::string>()
                            : std::string(),
          .tool = tool.name,
          .request_id = id.dump(-1, ' ', false, Json::error_handler_t::replace),
          .traceparent = std::move(traceparent),
          .duration_ms = std::nullopt,
          .outcome = ""};
}

// What a tools/call result says of itself, for the metrics and the one log line per call: views
// into the result (or the call's session argument), so nothing is copied or formatted to count
// the call.
struct ToolCallOutcome {
  std::string_view session;  // "" when neither the result nor the arguments name one
  std::string_view word;     // ok, cancelled, or the error code: bounded, for metrics and JSON
  std::optional<int64_t> exit_code;
};

ToolCallOutcome OutcomeOf(std::string_view argument_session, const Json& result, bool cancelled) {
  ToolCallOutcome outcome{.session = {}, .word = "ok", .exit_code = std::nullopt};
  if (auto structured = result.find("structuredContent");
      structured != result.end() && structured->is_object()) {
    if (auto id = structured->find("session_id"); id != structured->end() && id->is_string()) {
      outcome.session = id->get_ref<const std::string&>();
    }
    if (auto error = structured->find("error"); error != structured->end() && error->is_string()) {
      outcome.word = error->get_ref<const std::string&>();
    } else if (auto code = structured->find("exit_code");
               code != structured->end() && code->is_number_integer()) {
      outcome.exit_code = code->get<int64_t>();
    }
  }
  if (outcome.session.empty()) outcome.session = argument_session;
  if (cancelled) outcome = {.session = outcome.session, .word = "cancelled", .exit_code = {}};
  return outcome;
}

// Writes the tool_call line of a call whose response was `response`, in the call's own fields
// (`call_fields`: it runs after their scope ended, once the reply is sent).
void LogToolCall(const LogFields& call_fields, std::string_view tool, const Json& response,
                 double duration_ms, bool cancelled) {
  auto result = response.find("result");
  if (result == response.end()) return;
  ToolCallOutcome outcome = OutcomeOf(call_fields.session_id, *result, cancelled);
  std::string session(outcome.session);
  ScopedLogFields call_scope(call_fields);
  ScopedLogFields event_scope({.event = "tool_call",
                               .session_id = session,
                               .tool = "",
                               .request_id = "",
                               .traceparent = "",
                               .duration_ms = duration_ms,
                               .outcome = std::string(outcome.word)});
  // The session id is client input (an argument, or a result that echoes one): it goes out
  // quoted and bounded. The tool's name and the outcome are the server's own words.
  std::string text = outcome.exit_code ? fmt::format("ok exit_code={}", *outcome.exit_code)
                                       : std::string(outcome.word);
  spdlog::info("tool_call tool={} session={} duration_ms={:.1f} outcome={}", tool,
               session.empty() ? std::string("-") : Quoted(session), duration_ms, text);
}

}  // namespace

std::string_view LogLevelName(LogLevel level) { return kLogLevelNames[static_cast<size_t>(level)]; }

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (size_t i = 0; i < std::size(kLogLevelNames); ++i) {
    if (kLogLevelNames[i] == name) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

bool IsSupportedProtocolVersion(std::string_view version) {
  return std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), version) !=
         std::end(kProtocolVersions);
}

// ------------------------------------------------------------------------------------ Server

Server::Server(ServerOptions options, std::vector<Tool> tools)
    : options_(std::move(options)), tools_(std::move(tools)), pool_(options_.worker_threads) {
  auto entry_of = [](const Tool& tool) {
    Json entry = {{"name", tool.name}, {"description", tool.description}};
    if (!tool.title.empty()) entry["title"] = tool.title;
    entry["inputSchema"] = tool.input_schema;
    if (!tool.output_schema.is_null()) entry["outputSchema"] = tool.output_schema;
    if (!tool.annotations.is_null()) entry["annotations"] = tool.annotations;
    if (!tool.meta.is_null()) entry["_meta"] = tool.meta;
    return entry;
  };
  Json list = Json::array();
  for (const auto& tool : tools_) list.push_back(entry_of(tool));
  tools_list_ = {{"tools", list}};
  for (const auto& tool : options_.ui_tools) list.push_back(entry_of(tool));
  tools_list_ui_ = {{"tools", std::move(list)}};
}

Server::~Server() { Shutdown(); }

std::shared_ptr<Connection> Server::NewConnection() { return std::make_shared<Connection>(*this); }

void Server::Shutdown() { pool_.Shutdown(); }

const Tool* Server::FindTool(std::string_view name, bool ui) const {
  for (const auto& tool : tools_) {
    if (tool.name == name) return &tool;
  }
  if (!ui) return nullptr;
  for (const auto& tool : options_.ui_tools) {
    if (tool.name == name) return &tool;
  }
  return nullptr;
}

// -------------------------------------------------------------------------------- Connection

struct Connection::InFlight {
  std::mutex mutex;
  bool cancelled = false;
  bool finished = false;
  std::function<void()> cancel_hook;  // runs under `mutex`, so its guard can wait it out
  // Runs once the response is sent (or dropped, when cancelled): work the client need not wait
  // for, such as the tool_call log line. Set by the request's work, on its thread.
  std::function<void(const Json& response)> after_reply;

  void Cancel() {
    std::lock_guard<std::mutex> lock(mutex);
    if (cancelled || finished) return;
    cancelled = true;
    if (cancel_hook) cancel_hook();
  }
};

class Connection::Call : public ToolCall {
 public:
  Call(std::shared_ptr<Connection> connection, std::shared_ptr<InFlight> flight,
       std::shared_ptr<Reply> reply, Json progress_token)
      : connection_(std::move(connection)),
        flight_(std::move(flight)),
        reply_(std::move(reply)),
        progress_token_(std::move(progress_token)) {}

  void Log(LogLevel level, std::string_view text) override {
    // A modern request sets its own level, and without one gets no log messages at all.
    if (const ModernRequestMeta* modern = reply_->modern()) {
      if (!modern->log_level || level < *modern->log_level) return;
    } else if (static_cast<int>(level) < connection_->log_level_.load()) {
      return;
    }
    reply_->Send(MakeNotification(
        "notifications/message",
        {{"level", LogLevelName(level)}, {"logger", "mcp-sandbox"}, {"data", ValidUtf8(text)}}));
  }

  std::unique_ptr<ProgressReporter> StartProgress(double total_seconds) override {
    if (progress_token_.is_null()) return nullptr;
    auto reply = reply_;
    return std::make_unique<RunProgress>(
        progress_token_, [reply](const Json& notification) { reply->Send(notification); },
        total_seconds);
  }

  void ReportProgress(double progress, double total) override {
    if (progress_token_.is_null()) return;
    reply_->Send(MakeNotification(
        "notifications/progress",
        {{"progressToken", progress_token_}, {"progress", progress}, {"total", total}}));
  }

  std::shared_ptr<void> OnCancel(std::function<void()> hook) override {
    std::lock_guard<std::mutex> lock(flight_->mutex);
    if (flight_->cancelled) {
      hook();
      return nullptr;
    }
    flight_->cancel_hook = std::move(hook);
    auto flight = flight_;
    return std::shared_ptr<void>(nullptr, [flight](void*) {
      std::lock_guard<std::mutex> guard_lock(flight->mutex);
      flight->cancel_hook = nullptr;
    });
  }

  bool cancelled() const override {
    std::lock_guard<std::mutex> lock(flight_->mutex);
    return flight_->cancelled;
  }

  std::string DownloadUrl(const std::string& session_id, const std::string& path) const override {
    return connection_->DownloadUrl(session_id, path);
  }

 private:
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<InFlight> flight_;
  std::shared_ptr<Reply> reply_;
  Json progress_token_;
};

Connection::Connection(Server& server) : server_(server) {
  if (server_.options().resources) {
    subscriptions_ = std::make_unique<ResourceSubscriptions>(server_.options().resources);
  }
}

std::string Connection::protocol_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return protocol_version_;
}

void Connection::set_download_linker(DownloadLinker linker) {
  std::lock_guard<std::mutex> lock(mutex_);
  download_linker_ = std::move(linker);
}

std::string Connection::DownloadUrl(const std::string& session_id, const std::string& path) const {
  DownloadLinker linker;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    linker = download_linker_;
  }
  return linker ? linker(session_id, path) : std::string();
}

size_t Connection::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

void Connection::CancelAll() {
  std::vector<std::shared_ptr<InFlight>> flights;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, flight] : in_flight_) flights.push_back(flight);
  }
  for (auto& flight : flights) flight->Cancel();
}

void Connection::Handle(Json value, const std::shared_ptr<Reply>& reply) {
  std::optional<ActingSubject> acting;
  if (subject_) acting.emplace(*subject_);
  if (!value.is_array()) {
    HandleMessage(std::move(value), reply, /*in_batch=*/false);
    return;
  }
  // Batches exist only in 2025-03-26 (removed in 2025-06-18); initialize may not be batched,
  // so a batch before initialize is never valid.
  std::string version = protocol_version();
  if (version != "2025-03-26") {
    reply->Send(MakeErrorResponse(
        nullptr, kInvalidRequest,
        version.empty() ? "Invalid Request: a batch cannot come before initialize"
                        : fmt::format("Invalid Request: protocol version {} has no JSON-RPC "
                                      "batches (send one message at a time)",
                                      version)));
    reply->Close();
    return;
  }
  if (value.empty()) {
    reply->Send(MakeErrorResponse(nullptr, kInvalidRequest, "Invalid Request: empty batch"));
    reply->Close();
    return;
  }
  auto batch = std::make_shared<BatchReply>(reply, value.size());
  for (auto& element : value)
    HandleMessage(std::move(element), batch->Element(), /*in_batch=*/true);
}

void Connection::HandleMessage(Json value, const std::shared_ptr<Reply>& reply, bool in_batch) {
  auto message = ClassifyMessage(std::move(value));
  if (!message) {
    reply->Send(message.error());
    reply->Close();
    return;
  }
  // Nothing a client sends may take the server down: a handler that throws (a JSON type
  // surprise) answers -32603. Handlers throw, if at all, before they answer.
  try {
    switch (message->kind) {
      case Message::Kind::kResponse:  // we send no requests: nothing to match it with
        reply->Close();
        return;
      case Message::Kind::kNotification:
        HandleNotification(*message);
        reply->Close();
        return;
      case Message::Kind::kRequest:
        HandleRequest(*message, reply, in_batch);
        return;
    }
  } catch (const std::exception& ex) {
    spdlog::error("{} failed: {}", Quoted(message->method), Quoted(ex.what(), 200));
    if (message->kind == Message::Kind::kRequest) {
      reply->Send(MakeErrorResponse(message->id, kInternalError, "Internal error"));
    }
    reply->Close();
  }
}

void Connection::HandleNotification(const Message& message) {
  if (message.method == "notifications/cancelled") {
    const Json& params = message.params;
    if (!params.is_object() || !params.contains("requestId")) return;
    std::shared_ptr<InFlight> flight;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = in_flight_.find(IdKey(params["requestId"]));
      if (it != in_flight_.end()) flight = it->second;
    }
    // Unknown or finished ids are ignored (the race is allowed by the spec).
    if (flight) {
      spdlog::debug("request {} cancelled by the client", Quoted(params["requestId"].dump()));
      flight->Cancel();
    }
  }
  // notifications/initialized and anything else need no action.
}

Json Connection::Capabilities(bool modern, bool ui) const {
  const ServerOptions& options = server_.options();
  // prompts: none are served, but the list answers (empty) so clients that cache lists or
  // probe for prompts get an answer rather than an error.
  Json capabilities = {{"tools", {{"listChanged", false}}},
                       {"prompts", {{"listChanged", false}}},
                       {"logging", Json::object()}};
  // Embedded resources and resource links point into sessions; resources/read serves them,
  // and completion/complete fills in the template's session_id and path. resources/subscribe
  // is a legacy-era method (2026-07-28 removed it).
  if (options.resources) {
    capabilities["resources"] = {{"subscribe", !modern}, {"listChanged", false}};
    capabilities["completions"] = Json::object();
  }
  // MCP Apps: declared back only to a client that declared it (SEP-2133 extensions).
  if (ui && options.resources) {
    capabilities["extensions"] = {{apps::kUiExtensionId, Json::object()}};
  }
  return capabilities;
}

bool Connection::DeclaresUi(const Reply& reply) const {
  if (const ModernRequestMeta* modern = reply.modern()) {
    return apps::DeclaresUi(modern->client_capabilities);
  }
  return ui_.load();
}

void Connection::Adopt(const std::string& protocol_version) {
  std::lock_guard<std::mutex> lock(mutex_);
  protocol_version_ = protocol_version;
}

Json Connection::Initialize(const Json& params) {
  std::string requested;
  if (params.is_object()) {
    if (auto it = params.find("protocolVersion"); it != params.end() && it->is_string()) {
      requested = it->get<std::string>();
    }
  }
  std::string version =
      IsSupportedProtocolVersion(requested) ? requested : std::string(kLatestProtocolVersion);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    protocol_version_ = version;
  }
  if (params.is_object() && params.contains("clientInfo") && params["clientInfo"].is_object()) {
    const Json& client = params["clientInfo"];
    auto field = [&client](const char* key) {
      auto it = client.find(key);
      return it != client.end() && it->is_string() ? Quoted(it->get<std::string>()) : "?";
    };
    spdlog::info("client {} {} connected (protocol {})", field("name"), field("version"), version);
  }
  const ServerOptions& options = server_.options();
  bool ui = params.is_object() && params.contains("capabilities") &&
            apps::DeclaresUi(params["capabilities"]);
  ui_ = ui;
  Json capabilities = Capabilities(/*modern=*/false, ui);
  Json info = {{"name", options.name}, {"version", options.version}};
  if (!options.title.empty()) info["title"] = options.title;
  Json result = {{"protocolVersion", version},
                 {"capabilities", std::move(capabilities)},
                 {"serverInfo", std::move(info)}};
  if (!options.instructions.empty()) result["instructions"] = options.instructions;
  return result;
}

namespace {

void Answer(const std::shared_ptr<Reply>& reply, const Json& response) {
  reply->Send(response);
  reply->Close();
}

// A list request's params: no cursor we hand out exists (one page holds everything).
bool HasUnknownCursor(const Json& params) {
  return params.is_object() && params.contains("cursor") && !params["cursor"].is_null();
}

}  // namespace

const std::unordered_map<std::string_view, Connection::MethodEntry>& Connection::Methods() {
  static const std::unordered_map<std::string_view, MethodEntry> table = {
      {"initialize", {&Connection::OnInitialize, false}},
      {"server/discover", {&Connection::OnDiscover, false}},
      {"prompts/list", {&Connection::OnPromptsList, false}},
      {"prompts/get", {&Connection::OnPromptsGet, false}},
      {"ping", {&Connection::OnPing, false}},
      {"logging/setLevel", {&Connection::OnSetLogLevel, false}},
      {"tools/list", {&Connection::OnToolsList, false}},
      {"tools/call", {&Connection::OnToolsCall, false}},
      {"resources/list", {&Connection::OnResourcesList, true}},
      {"resources/templates/list", {&Connection::OnResourceTemplatesList, true}},
      {"resources/read", {&Connection::OnResourcesRead, true}},
      {"resources/subscribe", {&Connection::OnResourcesSubscribe, true}},
      {"resources/unsubscribe", {&Connection::OnResourcesUnsubscribe, true}},
      {"completion/complete", {&Connection::OnComplete, true}},
  };
  return table;
}

void Connection::HandleRequest(Message& message, const std::shared_ptr<Reply>& reply,
                               bool in_batch) {
  // A request is modern by what it carries, not by what the connection negotiated before
  // (basic/versioning.mdx): a dual-era server serves both on one stdio or endpoint.
  if (modern_only_ || HasModernMeta(message.params) || message.method == "server/discover") {
    if (in_batch) {
      return Answer(reply, MakeErrorResponse(message.id, kInvalidRequest,
                                             "Invalid Request: protocol revision 2026-07-28 has "
                                             "no JSON-RPC batches"));
    }
    return HandleModernRequest(message, reply);
  }
  const auto& methods = Methods();
  auto it = methods.find(message.method);
  if (it == methods.end() || (it->second.needs_resources && !server_.options().resources)) {
    return Answer(reply, MakeErrorResponse(message.id, kMethodNotFound,
                                           fmt::format("Method not found: {}",
                                                       ValidUtf8(Quoted(message.method)))));
  }
  (this->*(it->second.handler))(message, reply, in_batch);
}

void Connection::HandleModernRequest(Message& message, const std::shared_ptr<Reply>& reply) {
  auto meta = ValidateModernRequest(message.id, message.params);
  if (!meta) return Answer(reply, meta.error());
  const auto& methods = Methods();
  auto it = methods.find(message.method);
  bool removed = IsRemovedInModernEra(message.method);
  if (removed || it == methods.end() ||
      (it->second.needs_resources && !server_.options().resources)) {
    return Answer(reply,
                  MakeErrorResponse(
                      message.id, kMethodNotFound,
                      fmt::format("Method not found: {}{}", ValidUtf8(Quoted(message.method)),
                                  removed ? " (removed in protocol revision 2026-07-28)" : "")));
  }
  const ServerOptions& options = server_.options();
  Json info = {{"name", options.name}, {"version", options.version}};
  if (!options.title.empty()) info["title"] = options.title;
  auto modern =
      std::make_shared<ModernReply>(reply, std::move(*meta), message.method, std::move(info));
  (this->*(it->second.handler))(message, modern, /*in_batch=*/false);
}

void Connection::OnDiscover(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  Json versions = Json::array();
  for (auto version : kModernProtocolVersions) versions.push_back(version);
  Json result = {{"supportedVersions", std::move(versions)},
                 {"capabilities", Capabilities(/*modern=*/true, DeclaresUi(*reply))}};
  if (!server_.options().instructions.empty())
    result["instructions"] = server_.options().instructions;
  Answer(reply, MakeResponse(message.id, std::move(result)));
}

void Connection::OnPromptsList(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  if (HasUnknownCursor(message.params)) {
    return Answer(reply,
                  MakeErrorResponse(message.id, kInvalidParams, "Invalid params: unknown cursor"));
  }
  Answer(reply, MakeResponse(message.id, {{"prompts", Json::array()}}));
}

void Connection::OnPromptsGet(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  std::string name;
  if (message.params.is_object() && message.params.contains("name") &&
      message.params["name"].is_string()) {
    name = message.params["name"].get<std::string>();
  }
  Answer(reply, MakeErrorResponse(message.id, kInvalidParams,
                                  fmt::format("Invalid params: unknown prompt {} (this server "
                                              "has no prompts)",
                                              ValidUtf8(Quoted(Utf8Prefix(name, 128))))));
}

void Connection::OnInitialize(Message& message, const std::shared_ptr<Reply>& reply,
                              bool in_batch) {
  const Json& params = message.params;
  if (in_batch) {
    return Answer(reply,
                  MakeErrorResponse(message.id, kInvalidRequest,
                                    "Invalid Request: initialize must not be part of a batch"));
  }
  if (!params.is_object() || !params.contains("protocolVersion") ||
      !params["protocolVersion"].is_string()) {
    return Answer(reply,
                  MakeErrorResponse(message.id, kInvalidParams,
                                    "Invalid params: protocolVersion (a string) is required"));
  }
  Answer(reply, MakeResponse(message.id, Initialize(params)));
}

void Connection::OnPing(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  Answer(reply, MakeResponse(message.id, Json::object()));
}

void Connection::OnSetLogLevel(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  const Json& params = message.params;
  std::optional<LogLevel> level;
  if (params.is_object() && params.contains("level") && params["level"].is_string()) {
    level = ParseLogLevel(params["level"].get<std::string>());
  }
  if (!level) {
    return Answer(reply, MakeErrorResponse(message.id, kInvalidParams,
                                           "Invalid params: level must be one of debug, info, "
                                           "notice, warning, error, critical, alert, emergency"));
  }
  log_level_ = static_cast<int>(*level);
  Answer(reply, MakeResponse(message.id, Json::object()));
}

void Connection::OnToolsList(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  if (HasUnknownCursor(message.params)) {
    return Answer(reply,
                  MakeErrorResponse(message.id, kInvalidParams, "Invalid params: unknown cursor"));
  }
  Answer(reply, MakeResponse(message.id, server_.tools_list(DeclaresUi(*reply))));
}

void Connection::OnToolsCall(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  StartToolCall(message, reply);
}

void Connection::RunAsync(const Message& message, const std::shared_ptr<Reply>& reply,
                          std::function<Json(const std::shared_ptr<InFlight>&)> work,
                          bool streams) {
  auto flight = std::make_shared<InFlight>();
  std::string key = IdKey(message.id);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!in_flight_.emplace(key, flight).second) {
      reply->Send(MakeErrorResponse(message.id, kInvalidRequest,
                                    "Invalid Request: this id belongs to a request in flight"));
      reply->Close();
      return;
    }
  }
  auto self = shared_from_this();
  Json id = message.id;
  // Inline, the caller's thread writes the response once this returns (HTTP: the request's own
  // thread waits for its answer): what the work leaves until its reply is sent then goes to the
  // caller's scope, which HTTP opens around the request and its write (http_transport.cc).
  const bool inline_run = run_inline_ && !streams;
  auto task = [self, flight, key, id, reply, inline_run, work = std::move(work)] {
    std::optional<ActingSubject> acting;  // on a pool thread too, the call acts as its client
    if (self->subject_) acting.emplace(*self->subject_);
    // What the work leaves until its reply is sent (a per-call memory peak's reset): run below,
    // once the response is out.
    std::optional<AfterReply> after_reply;
    if (!inline_run) after_reply.emplace();
    Json response;
    try {
      response = work(flight);
    } catch (const std::exception& ex) {
      spdlog::error("request {} failed: {}", Quoted(id.dump()), Quoted(ex.what(), 200));
      response = MakeErrorResponse(id, kInternalError, "Internal error");
    }
    bool send = false;
    {
      std::lock_guard<std::mutex> lock(flight->mutex);
      send = !flight->cancelled;  // a cancelled request gets no response
      flight->finished = true;
    }
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->in_flight_.erase(key);
    }
    if (send) reply->Send(response);
    reply->Close();
    if (inline_run) {
      if (flight->after_reply) {
        AfterReply::Defer(
            [after = flight->after_reply, response = std::move(response)] { after(response); });
      }
      return;
    }
    if (flight->after_reply) flight->after_reply(response);
    after_reply->Run();
  };
  if (inline_run) {
    task();
  } else if (!server_.Submit(std::move(task))) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_.erase(key);
    }
    reply->Send(MakeErrorResponse(message.id, kInternalError, "the server is shutting down"));
    reply->Close();
  }
}

void Connection::StartToolCall(Message& message, const std::shared_ptr<Reply>& reply) {
  Json& params = message.params;
  auto fail = [&](const std::string& text) {
    reply->Send(MakeErrorResponse(message.id, kInvalidParams, text));
    reply->Close();
  };
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    return fail("Invalid params: tools/call needs a tool name");
  }
  std::string name = params["name"].get<std::string>();
  const Tool* tool = server_.FindTool(name, DeclaresUi(*reply));
  if (tool == nullptr) return fail(fmt::format("Unknown tool: {}", ValidUtf8(Quoted(name))));
  if (const ModernRequestMeta* modern = reply->modern();
      modern != nullptr && !tool->required_client_capabilities.is_null()) {
    Json missing =
        MissingClientCapabilities(tool->required_client_capabilities, modern->client_capabilities);
    if (!missing.empty()) {
      std::string text =
          fmt::format("Missing required client capability: {} needs {}", name, missing.dump());
      reply->Send(MakeErrorResponse(message.id, kMissingRequiredClientCapability, text,
                                    {{"requiredCapabilities", std::move(missing)}}));
      reply->Close();
      return;
    }
  }
  Json arguments = Json::object();
  if (auto it = params.find("arguments"); it != params.end() && !it->is_null()) {
    if (!it->is_object()) return fail("Invalid params: arguments must be an object");
    arguments = std::move(*it);  // an upload's content moves on, it is not copied
  }
  for (const auto& [old_name, listed_name] : tool->argument_aliases) {
    auto old_it = arguments.find(old_name);
    if (old_it == arguments.end()) continue;
    if (arguments.contains(listed_name)) {
      return fail(fmt::format("Invalid params: give {} or its former name {}, not both",
                              listed_name, old_name));
    }
    Json value = std::move(*old_it);
    arguments.erase(old_name);
    arguments[listed_name] = std::move(value);
  }
  Json progress_token = nullptr;
  if (auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (auto token = meta->find("progressToken");
        token != meta->end() && (token->is_string() || token->is_number_integer())) {
      progress_token = *token;
    }
  }
  std::string traceparent = TraceparentOf(params);
  auto self = shared_from_this();
  Json id = message.id;
  RunAsync(
      message, reply,
      [self, tool, arguments = std::move(arguments), progress_token, reply, id,
       traceparent = std::move(traceparent)](const std::shared_ptr<InFlight>& flight) {
        LogFields call_fields = CallLogFields(*tool, arguments, id, traceparent);
        ScopedLogFields log_fields(call_fields);
        Call call(self, flight, reply, progress_token);
        auto start = std::chrono::steady_clock::now();
        Json result;
        if (auto problem = CheckAgainstSchema(tool->input_schema, arguments)) {
          result = ToolError(ErrorCode::kInvalidArgument, *problem);
        } else {
          try {
            result = tool->handler(call, arguments);
          } catch (const std::exception& ex) {
            spdlog::error("tool {} threw: {}", tool->name, Quoted(ex.what(), 200));
            result = ToolError(ErrorCode::kInternal,
                               "the server failed while handling this call; see its log");
          }
        }
        double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        bool cancelled = call.cancelled();
        metrics::ToolCallFinished(
            tool->name, OutcomeOf(call_fields.session_id, result, cancelled).word, ms / 1000);
        // The tool_call line waits for the reply to be sent; nothing of it is made when the
        // logger does not show info lines.
        if (spdlog::should_log(spdlog::level::info)) {
          flight->after_reply = [tool, call_fields = std::move(call_fields), ms,
                                 cancelled](const Json& response) {
            LogToolCall(call_fields, tool->name, response, ms, cancelled);
          };
        }
        if (!tool->annotations.is_object() || !tool->annotations.value("readOnlyHint", false)) {
          self->SendResourceUpdates(*reply);
        }
        if (const auto* modern = dynamic_cast<const ModernReply*>(reply.get())) {
          modern->Decorate(result);
        }
        return MakeResponse(id, std::move(result));
      },
      /*streams=*/!progress_token.is_null());
}

}  // namespace sandbox::mcp
