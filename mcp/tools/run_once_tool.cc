// sandbox_run_once: create a session, put the given files in, run the code, return output,
// figures and artifacts, and close the session — one call, nothing left behind.
#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/run_call.h"
#include "mcp/tools/run_output.h"
#include "runtime/base/base64.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_report.h"

namespace sandbox::mcp::tools {

namespace {

// Closes the session when the call ends, whatever happened (a run in flight is killed). The
// answer does not wait for the sandbox's teardown: the reaper finishes it.
class SessionCloser {
 public:
  SessionCloser(SessionManager& sessions, std::string id)
      : sessions_(sessions), id_(std::move(id)) {}
  ~SessionCloser() {
    (void)sessions_.Close(id_, /*force=*/true, SessionManager::Teardown::kBackground);
  }
  SessionCloser(const SessionCloser&) = delete;
  SessionCloser& operator=(const SessionCloser&) = delete;

 private:
  SessionManager& sessions_;
  std::string id_;
};

}  // namespace

Tool MakeRunOnceTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_run_once";
  tool.title = "Run once";
  tool.description = fmt::format(
      "Run Python code (or a shell command) once in a fresh sandbox that is destroyed "
      "afterwards: creates a session, uploads the given files to /mnt/data, runs, and returns "
      "output, figures (as images) and the files written to /mnt/data, then closes it. Nothing "
      "persists; for follow-up work use sandbox_run_python with a session. Limited to {} s. {}",
      context->settings.exec_timeout_s, egress::EgressSentence(context->sessions.config().egress));
  tool.input_schema = InputSchema(
      {{"code", Property("string", "Python source, or a shell command when language is \"shell\".",
                         {{"minLength", 1}})},
       {"language", Property("string", "\"python\" (default) or \"shell\" (/bin/sh -c).",
                             {{"enum", {"python", "shell"}}})},
       {"files",
        Property("array", "Files to put in /mnt/data first.",
                 {{"maxItems", 20},
                  {"items", InputSchema({{"filename", Property("string", "Name under /mnt/data.",
                                                               {{"minLength", 1}})},
                                         {"content", Property("string", "base64 content.",
                                                              {{"contentEncoding", "base64"}})}},
                                        {"filename", "content"})}})},
       {"timeout_s", Property("number",
                              fmt::format("Seconds before the run is stopped (default and "
                                          "maximum: {}).",
                                          context->settings.exec_timeout_s),
                              {{"exclusiveMinimum", 0}})}},
      {"code"});
  tool.output_schema = RunOutputSchema();
  tool.annotations = Annotations("Run once", false, false, false, RunsCodeWithNetwork(*context));
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    RunRequest request;
    request.kind = arguments.value("language", "python") == "shell" ? RunRequest::Kind::kShell
                                                                    : RunRequest::Kind::kPython;
    request.code = arguments["code"].get<std::string>();
    RunPresentation presentation;
    presentation.embed_artifacts = true;
    if (auto bounded = BoundRunRequest(*context, arguments, request, presentation); !bounded) {
      return ToolError(bounded.error());
    }
    // Decode and check every file before a sandbox is started for nothing.
    std::vector<std::pair<std::string, std::string>> files;
    uint64_t total = 0;
    for (const auto& file : arguments.value("files", Json::array())) {
      auto path = UploadPath(file["filename"].get<std::string>());
      if (!path) return ToolError(path.error());
      auto content = Base64Decode(file["content"].get<std::string>());
      if (!content) {
        return ToolError(ErrorCode::kInvalidArgument,
                         fmt::format("the content of {} is not valid base64", *path));
      }
      total += content->size();
      if (auto fits = CheckUploadSize(context->settings, content->size(), *path); !fits) {
        return ToolError(fits.error());
      }
      if (total > context->settings.max_upload_bytes * 4) {
        return ToolError(
            ErrorCode::kUploadTooLarge,
            fmt::format("the files have {} together; run_once takes at most {} "
                        "(4 x SANDBOX_MAX_UPLOAD_BYTES)",
                        FormatBytes(total), FormatBytes(context->settings.max_upload_bytes * 4)));
      }
      files.emplace_back(std::move(*path), std::move(*content));
    }

    SessionOptions options;
    options.name = "run_once";
    auto info = context->sessions.Create(options);
    if (!info) return ToolError(info.error());
    SessionCloser closer(context->sessions, info->id);
    presentation.session_id = info->id;
    Json extra = {{"session_id", info->id}};
    for (const auto& [path, content] : files) {
      if (auto written = context->sessions.WriteFile(info->id, path, content, true); !written) {
        return ToolError(written.error(), extra);
      }
    }
    auto run = RunWithProgress(*context, call, info->id, std::move(request));
    if (!run) return ToolError(run.error(), extra);
    return RunToolResult(*context, call, *run, presentation);  // reads artifacts, then closes
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
