#include "mcp/tools/sandbox_tools.h"

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/base64.h"
#include "runtime/base/units.h"

namespace sandbox::mcp {

namespace {
constexpr uint64_t kMaxDownloadBytes = 256ull << 20;
}  // namespace

std::vector<Tool> SandboxTools(SessionManager& sessions, const ToolSettings& settings) {
  auto context = std::make_shared<tools::ToolContext>(tools::ToolContext{sessions, settings});
  // The order of DESIGN.md's table: the five tools of the server this replaces first.
  return {tools::MakeRunPythonTool(context),    tools::MakeUploadFileTool(context),
          tools::MakeReadArtifactTool(context), tools::MakeListArtifactsTool(context),
          tools::MakeCloseSessionTool(context), tools::MakeCreateSessionTool(context),
          tools::MakeListSessionsTool(context), tools::MakeSessionStatusTool(context),
          tools::MakeRunCommandTool(context),   tools::MakeInstallPackagesTool(context),
          tools::MakeWriteFileTool(context),    tools::MakeReadFileTool(context),
          tools::MakeRunOnceTool(context)};
}

ResourceReader SandboxResourceReader(SessionManager& sessions, const ToolSettings& settings) {
  uint64_t limit = settings.max_result_bytes / 4 * 3;
  return [&sessions, limit](const std::string& uri) -> Result<Json> {
    auto parsed = ParseSandboxUri(uri);
    if (!parsed) {
      return Fail(ErrorCode::kInvalidArgument,
                  "not a sandbox URI (sandbox://SESSION_ID/path/to/file)");
    }
    const auto& [session_id, path] = *parsed;
    SBX_ASSIGN_OR_RETURN(FileInfo info, sessions.Stat(session_id, path));
    if (info.is_dir) return Fail(ErrorCode::kInvalidPath, "{} is a directory", path);
    SBX_ASSIGN_OR_RETURN(std::string content, sessions.ReadFile(session_id, path, limit));
    Json entry = {{"uri", uri}, {"mimeType", info.mime_type}};
    if (IsTextMime(info.mime_type) && ValidUtf8(content).size() == content.size()) {
      entry["text"] = std::move(content);
    } else {
      entry["blob"] = Base64Encode(content);
    }
    return Json::array({std::move(entry)});
  };
}

Json SandboxResourceTemplates() {
  return Json::array({Json{{"uriTemplate", "sandbox://{session_id}/mnt/data/{path}"},
                           {"name", "session-file"},
                           {"title", "A file in a sandbox session"},
                           {"description",
                            "A file under /mnt/data of an open session, as tool results link "
                            "to it."}}});
}

FileReader SandboxFileReader(SessionManager& sessions) {
  return [&sessions](const std::string& session_id,
                     const std::string& path) -> Result<DownloadedFile> {
    SBX_ASSIGN_OR_RETURN(FileInfo info, sessions.Stat(session_id, path));
    if (info.is_dir) return Fail(ErrorCode::kNotFound, "{} is a directory", path);
    SBX_ASSIGN_OR_RETURN(std::string content,
                         sessions.ReadFile(session_id, path, kMaxDownloadBytes));
    return DownloadedFile{std::move(content), info.mime_type};
  };
}

std::string SandboxInstructions(const ToolSettings& settings) {
  return fmt::format(
      "Runs Python and shell commands in isolated sandboxes with no network. A session keeps "
      "a persistent Python interpreter (like a notebook) and a /mnt/data directory: call "
      "sandbox_run_python without session_id to start one and reuse the session_id it returns. "
      "Upload inputs with sandbox_upload_file (base64) and read them from /mnt/data; files "
      "written to /mnt/data come back as artifacts (sandbox_list_artifacts, "
      "sandbox_read_artifact); open matplotlib figures come back as images. Runs stop after "
      "{} s. Close sessions you no longer need with sandbox_close_session; idle ones expire.",
      settings.exec_timeout_s);
}

}  // namespace sandbox::mcp
