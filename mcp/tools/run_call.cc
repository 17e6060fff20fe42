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
  CancelToken token;
  auto cancel_link = call.OnCancel([&token] { token.Cancel(); });
  auto progress = call.StartProgress(request.timeout_s);
  OutputCallback on_output;
  if (progress) {
    on_output = [&progress](int stream, std::string_view chunk) {
      progress->OnOutput(stream, chunk);
    };
  }
  auto run = context.sessions.Run(session_id, std::move(request), on_output, &token);
  progress.reset();  // no progress notification after this point
  cancel_link.reset();
  return run;
}

}  // namespace sandbox::mcp::tools
