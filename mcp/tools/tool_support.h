// What the sandbox tools share: schema builders, session resolution, path rules, the
// conversion of FileInfo to result files, and the Make*Tool factories of each tool file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/tool.h"
#include "mcp/tool_result.h"
#include "mcp/tools/sandbox_tools.h"
#include "runtime/base/result.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/session_manager.h"

namespace sandbox::mcp::tools {

// The session's files (runtime/sandbox_layout.h), as the tools spell paths.
inline constexpr std::string_view kDataDir = layout::kDataDir;

struct ToolContext {
  SessionManager& sessions;
  ToolSettings settings;
};
// Shared by the handlers of every tool (they outlive SandboxTools()).
using ContextPtr = std::shared_ptr<ToolContext>;

// --- Schemas ---------------------------------------------------------------------------------

// {"type": type, "description": description, ...extra}
Json Property(std::string_view type, std::string_view description, Json extra = Json::object());
// An object schema with additionalProperties:false.
Json InputSchema(Json properties, const std::vector<std::string>& required = {});
// An output schema that also admits the error shape {"error", "message"} (the SDK client
// validates structuredContent of error results too).
Json OutputSchema(Json properties, std::vector<std::string> required_on_success);
// MCP's tool hints. `open_world`: the tool runs the session's code, which can reach the hosts the
// egress policy allows (RunsCodeWithNetwork); tools that only move files or sessions are closed.
Json Annotations(std::string_view title, bool read_only, bool destructive, bool idempotent,
                 bool open_world = false);
// Whether code a session runs can reach the network, from the egress policy in force.
bool RunsCodeWithNetwork(const ToolContext& context);
// The name x-mcp-header gives session_id: the header is Mcp-Param-Session-Id.
inline constexpr char kSessionIdHeaderName[] = "Session-Id";
// The session_id property: required, or optional with "omit to create a new session".
Json SessionIdProperty(bool optional_creates);

// --- Sessions --------------------------------------------------------------------------------

struct SessionChoice {
  std::string id;
  bool created = false;
};
// The session named by arguments["session_id"], or a new one when it is absent (the client
// is told through a log notification).
Result<SessionChoice> ResolveSession(ToolContext& context, ToolCall& call, const Json& arguments);
// {"session_id": id} for a tool error's structuredContent, or {} when `id` is not a session id:
// an error never echoes what the client sent whole (the message quotes it cut).
Json SessionIdExtra(const std::string& id);

// --- Paths -----------------------------------------------------------------------------------

// An upload target: a relative name ("data.csv", "in/data.csv") under /mnt/data, or an
// absolute path below /mnt/data. kInvalidFilename for empty names, "..", NUL or control
// characters, trailing '/', or anything outside /mnt/data.
Result<std::string> UploadPath(std::string_view filename);
// A path to read or list: relative ones are under /mnt/data. kInvalidPath for NUL bytes.
Result<std::string> SandboxPath(std::string_view path);
// The file sandbox_read_artifact and resources/read return: `path` as SandboxPath takes it,
// stat'ed in the session. kInvalidPath for a directory; the session's errors as they come.
Result<FileInfo> StatReadableFile(ToolContext& context, const std::string& session_id,
                                  std::string_view path);
// The largest file they return inline: base64 grows data by 4/3, and room is kept for the
// text block and structuredContent within SANDBOX_MAX_RESULT_BYTES.
uint64_t InlineReadLimit(const ToolSettings& settings);

// --- Sizes -----------------------------------------------------------------------------------

// kUploadTooLarge when a file of `size` bytes is more than SANDBOX_MAX_UPLOAD_BYTES allows, with
// one wording for sandbox_upload_file, sandbox_write_file and sandbox_run_once. `what` names the
// file ("the file", "the text", "in/data.csv"); `estimated`: `size` is a bound taken before
// decoding (base64), so the message says "about".
Status CheckUploadSize(const ToolSettings& settings, uint64_t size, std::string_view what,
                       bool estimated = false);

// --- Results ---------------------------------------------------------------------------------

ResultFile MakeResultFile(const ToolCall& call, const std::string& session_id,
                          const FileInfo& info);
// {"path", "size", "mime_type", "download_url"?} for structuredContent.
// The seed server's `filename` of an artifact: its path relative to /mnt/data ("out/a.csv"),
// or the last component of a path outside it.
std::string ArtifactFilename(std::string_view path);
Json FileJson(const ResultFile& file);
// timeout_s from the arguments, bounded by the configured maximum; `note` explains a cut.
double RunTimeout(const ToolContext& context, const Json& arguments, std::string* note);
// Image types MCP clients render as `image` content.
bool IsInlineImageMime(std::string_view mime);

// --- The tools -------------------------------------------------------------------------------

Tool MakeRunPythonTool(const ContextPtr& context);
Tool MakeRunCommandTool(const ContextPtr& context);
Tool MakeInstallPackagesTool(const ContextPtr& context);
Tool MakeRunOnceTool(const ContextPtr& context);
Tool MakeUploadFileTool(const ContextPtr& context);
Tool MakeWriteFileTool(const ContextPtr& context);
Tool MakeReadFileTool(const ContextPtr& context);
Tool MakeReadArtifactTool(const ContextPtr& context);
Tool MakeListArtifactsTool(const ContextPtr& context);
Tool MakeCreateSessionTool(const ContextPtr& context);
Tool MakeListSessionsTool(const ContextPtr& context);
Tool MakeSessionStatusTool(const ContextPtr& context);
Tool MakeCloseSessionTool(const ContextPtr& context);
Tool MakeForkSessionTool(const ContextPtr& context);

}  // namespace sandbox::mcp::tools
