#include "mcp/tools/run_call.h"

#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace sandbox::mcp::tools {

Status BoundRunRequest(const ToolContext& context, const Json& arguments, RunRequest& request,
                       RunPresentation& presentation) {
  std::string note;
  request.timeout_s = RunTimeout(context, arguments, &note);  // clamped, with a note, not refused
  SBX_TRY(context.sessions.CheckRunRequest(request));
  if (!note.empty()) presentation.notes.push_back(note);
  presentation.timeout_s = request.timeout_s;
  request.max_output_bytes = context.settings.max_output_bytes;
  return {};
}

Result<RunResult> RunWithProgress(ToolContext& context, ToolCall& call,
                                  const std::string& session_id, RunRequest request) {
  double timeout_s = request.timeout_s;
  return WithProgressAndCancel(
      call, timeout_s, [&](const OutputCallback& on_output, CancelToken* token) {
        return context.sessions.Run(session_id, std::move(request), on_output, token);
      });
}

}  // namespace sandbox::mcp::tools
