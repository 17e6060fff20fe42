// sandbox_run_python and sandbox_run_command: run code in a session (created when none is
// named), with progress notifications, cancellation and a bounded time.
#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/run_call.h"
#include "mcp/tools/run_output.h"
#include "rootfs/recipe/image_batteries.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_report.h"

namespace sandbox::mcp::tools {

namespace {

// Runs `request` in the session the arguments name (or a new one), and presents the result.
Json RunInSession(ToolContext& context, ToolCall& call, const Json& arguments, RunRequest request) {
  RunPresentation presentation;
  if (auto bounded = BoundRunRequest(context, arguments, request, presentation); !bounded) {
    return ToolError(bounded.error());
  }
  auto session = ResolveSession(context, call, arguments);
  if (!session) return ToolError(session.error());
  presentation.session_id = session->id;
  presentation.session_created = session->created;

  auto run = RunWithProgress(context, call, session->id, std::move(request));
  if (!run) {
    Json extra = {{"session_id", session->id}};
    if (session->created) extra["session_created"] = true;
    return ToolError(run.error(), extra);
  }
  return RunToolResult(context, call, *run, presentation);
}

Json TimeoutProperty(const ToolContext& context) {
  return Property("number",
                  fmt::format("Seconds before the run is stopped (default and maximum: {}). On "
                              "timeout the run is interrupted; if it does not stop, the worker "
                              "is killed and the session's Python state is lost.",
                              context.settings.exec_timeout_s),
                  {{"exclusiveMinimum", 0}});
}

}  // namespace

Tool MakeRunPythonTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_run_python";
  tool.title = "Run Python";
  tool.description = fmt::format(
      "Run Python code in a sandboxed, stateful session, like a notebook cell: variables, "
      "imports and open figures persist between calls in the same session.\n"
      "- Omit session_id to start a new session; pass the session_id from the result to keep "
      "working in it.\n"
      "- Files live in /mnt/data: uploads arrive there, and files you write there come back as "
      "artifacts. matplotlib figures left open are returned as images automatically (and saved "
      "to /mnt/data).\n"
      "- Each run is limited to {} s (timeout_s); stdout and stderr are kept up to {} each. "
      "{}\n"
      "- The default image has {}. A Python exception gives exit_code 1 and the traceback in "
      "stderr; the session stays usable. fresh=true runs in a new interpreter process.",
      context->settings.exec_timeout_s, FormatBytes(context->settings.max_output_bytes),
      egress::EgressSentence(context->sessions.config().egress),
      rootfs::DefaultImageBatteryNames());
  tool.input_schema =
      InputSchema({{"code", Property("string",
                                     "Python source to run. As in a notebook, the value of "
                                     "a final expression is printed (unless it is None).",
                                     {{"minLength", 1}})},
                   {"session_id", SessionIdProperty(true)},
                   {"timeout_s", TimeoutProperty(*context)},
                   {"fresh", Property("boolean",
                                      "Run in a new interpreter process instead of the session's "
                                      "persistent one (default false).")}},
                  {"code"});
  tool.output_schema = RunOutputSchema();
  tool.annotations = Annotations("Run Python", false, true, false, RunsCodeWithNetwork(*context));
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    RunRequest request;
    request.kind = RunRequest::Kind::kPython;
    request.code = arguments["code"].get<std::string>();
    request.fresh = arguments.value("fresh", false);
    return RunInSession(*context, call, arguments, std::move(request));
  };
  return tool;
}

Tool MakeRunCommandTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_run_command";
  tool.title = "Run shell command";
  tool.description = fmt::format(
      "Run a shell command (/bin/sh -c) in a sandboxed session, by default in /mnt/data.\n"
      "- Omit session_id to start a new session; pass the session_id from the result to reuse "
      "it (files in /mnt/data and /tmp persist; each command runs in a new shell).\n"
      "- Limited to {} s (timeout_s); stdout and stderr are kept up to {} each. The exit code "
      "is the command's own.\n- {}",
      context->settings.exec_timeout_s, FormatBytes(context->settings.max_output_bytes),
      egress::EgressSentence(context->sessions.config().egress));
  tool.input_schema = InputSchema(
      {{"command",
        Property("string", "The command line, run with /bin/sh -c.", {{"minLength", 1}})},
       {"session_id", SessionIdProperty(true)},
       {"timeout_s", TimeoutProperty(*context)},
       {"cwd", Property("string", "Working directory (default /mnt/data).", {{"minLength", 1}})}},
      {"command"});
  tool.output_schema = RunOutputSchema();
  tool.annotations =
      Annotations("Run shell command", false, true, false, RunsCodeWithNetwork(*context));
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    RunRequest request;
    request.kind = RunRequest::Kind::kShell;
    request.code = arguments["command"].get<std::string>();
    if (arguments.contains("cwd")) {
      auto cwd = SandboxPath(arguments["cwd"].get<std::string>());
      if (!cwd) return ToolError(cwd.error());
      request.cwd = *cwd;
    }
    return RunInSession(*context, call, arguments, std::move(request));
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
