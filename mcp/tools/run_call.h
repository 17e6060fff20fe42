// What the run tools (sandbox_run_python, sandbox_run_command, sandbox_run_once) share around
// one run: bounding the request by the server's settings, and running it with progress
// notifications and client cancellation wired in.
#pragma once

#include <string>
#include <string_view>

#include "mcp/tools/run_output.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/result.h"

namespace sandbox::mcp::tools {

// Checks the code size (kCodeTooLarge, naming SANDBOX_MAX_CODE_BYTES), then sets the request's
// timeout (the arguments' timeout_s, cut to the configured maximum with a note in
// `presentation`) and its output bound.
Status BoundRunRequest(const ToolContext& context, const Json& arguments, RunRequest& request,
                       RunPresentation& presentation);

// Calls `work(on_output, &token)`: the output it reports becomes the call's progress (when the
// client asked for progress), and the client's cancel cancels the token. No progress
// notification goes out after it returns.
template <typename Work>
auto WithProgressAndCancel(ToolCall& call, double timeout_s, Work&& work) {
  CancelToken token;
  auto cancel_link = call.OnCancel([&token] { token.Cancel(); });
  auto progress = call.StartProgress(timeout_s);
  OutputCallback on_output;
  if (progress) {
    on_output = [&progress](int stream, std::string_view chunk) {
      progress->OnOutput(stream, chunk);
    };
  }
  auto result = work(on_output, &token);
  progress.reset();
  cancel_link.reset();
  return result;
}

// Runs `request` in the session, reporting its output as progress while it runs (when the
// client asked for progress) and cancelling it when the client cancels the call.
Result<RunResult> RunWithProgress(ToolContext& context, ToolCall& call,
                                  const std::string& session_id, RunRequest request);

}  // namespace sandbox::mcp::tools
