#include "mcp/tools/sandbox_tools.h"

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_report.h"

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
          tools::MakeRunOnceTool(context),      tools::MakeForkSessionTool(context)};
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

std::string SandboxInstructions(const ToolSettings& settings, const egress::EgressConfig& egress) {
  return fmt::format(
      "Runs Python and shell commands in isolated sandboxes. {} A session keeps "
      "a persistent Python interpreter (like a notebook) and a /mnt/data directory: call "
      "sandbox_run_python without session_id to start one and reuse the session_id it returns. "
      "Upload inputs with sandbox_upload_file (base64) and read them from /mnt/data; files "
      "written to /mnt/data come back as artifacts (sandbox_list_artifacts, "
      "sandbox_read_artifact); open matplotlib figures come back as images. Runs stop after "
      "{} s. Close sessions you no longer need with sandbox_close_session; idle ones expire.",
      egress::EgressSentence(egress), settings.exec_timeout_s);
}

}  // namespace sandbox::mcp
