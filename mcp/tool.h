// What a tool is to the dispatcher: a name, schemas, annotations and a handler, plus the
// context (ToolCall) a handler gets: client logging, progress, cancellation, download URLs.
// Handlers return a CallToolResult object (see mcp/tool_result.h to build one).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sandbox::mcp {

using Json = nlohmann::json;

// RFC 5424 severities, as MCP logging names them, lowest first.
enum class LogLevel { kDebug, kInfo, kNotice, kWarning, kError, kCritical, kAlert, kEmergency };
std::string_view LogLevelName(LogLevel level);
std::optional<LogLevel> ParseLogLevel(std::string_view name);

// Sends notifications/progress for one request while a run lasts: the elapsed time as
// progress, the timeout as total, and the tail of the output as message. A heartbeat every
// second keeps clients that reset their request timeout on progress from giving up.
class ProgressReporter {
 public:
  virtual ~ProgressReporter() = default;
  virtual void OnOutput(int stream, std::string_view chunk) = 0;
};

class ToolCall {
 public:
  virtual ~ToolCall() = default;
  // notifications/message to the client, when its log level lets `level` through.
  virtual void Log(LogLevel level, std::string_view text) = 0;
  // Starts progress notifications when the client sent a progressToken, else returns null.
  // They stop when the reporter is destroyed (before the response goes out).
  virtual std::unique_ptr<ProgressReporter> StartProgress(double total_seconds) = 0;
  // One notifications/progress (when the client sent a progressToken), for work that counts
  // its own steps.
  virtual void ReportProgress(double progress, double total) = 0;
  // Calls `hook` when the client cancels this request (notifications/cancelled), or at once
  // if it already has. The hook stays registered until the returned guard is destroyed; it
  // never runs after that.
  virtual std::shared_ptr<void> OnCancel(std::function<void()> hook) = 0;
  virtual bool cancelled() const = 0;
  // A link the HTTP transport serves that one file at until SANDBOX_DOWNLOAD_TTL from now
  // (mcp/file_downloads.h), or "" when downloads are off (stdio) or the file is outside /mnt/data.
  virtual std::string DownloadUrl(const std::string& session_id, const std::string& path) const = 0;
};

struct Tool {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema;   // validated by the dispatcher before the handler runs
  Json output_schema;  // describes structuredContent (errors included)
  Json annotations;
  std::function<Json(ToolCall& call, const Json& arguments)> handler;
  // Former argument names still accepted but not listed: {old, listed}. The dispatcher renames
  // an old one before validation (both at once is an invalid-params error).
  std::vector<std::pair<std::string, std::string>> argument_aliases = {};
  // Client capabilities the handler relies on ({"sampling": {}}): a modern request that does
  // not declare them is refused with MissingRequiredClientCapability (-32021).
  Json required_client_capabilities = nullptr;
  // The tools/list entry's _meta (an MCP Apps view: mcp/apps/ui_extension.h); null: none.
  Json meta = nullptr;
};

}  // namespace sandbox::mcp
