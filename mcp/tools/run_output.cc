#include "mcp/tools/run_output.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::tools {

namespace {

// The call's own usage (RunResult's figures, measured by the session manager).
Json RunUsageJson(const RunResult& run) {
  // Built in place: a braced list makes each member a two-element array first and then copies
  // it into the object: 1.3 µs against 0.7 µs for the two members every run has, on the reply's
  // path (docs/benchmarks.md "Usage and metrics").
  Json usage(Json::value_t::object);
  auto& members = usage.get_ref<Json::object_t&>();
  members.emplace("wall_seconds", run.duration_s);
  members.emplace("cpu_seconds", run.cpu_seconds);
  if (!run.memory_peak_scope.empty()) {
    members.emplace("memory_peak_bytes", run.memory_peak_bytes);
    members.emplace("memory_peak_scope", run.memory_peak_scope);
  }
  return usage;
}

constexpr size_t kMaxInlineImages = 8;
constexpr uint64_t kMaxInlineImageBytes = 4u << 20;
constexpr uint64_t kMaxEmbeddedTextBytes = 16u << 10;  // for sessions that stay open
constexpr size_t kMaxArtifactsShown = 50;

// Cuts stdout and stderr so that together they take at most `allowance` bytes: each gets
// half, and what one does not use goes to the other.
void FitOutputs(std::string& out, std::string& err, size_t allowance, bool* out_cut,
                bool* err_cut) {
  size_t half = allowance / 2;
  size_t out_limit = out.size();
  size_t err_limit = err.size();
  if (out.size() + err.size() > allowance) {
    if (out.size() <= half) {
      err_limit = allowance - out.size();
    } else if (err.size() <= half) {
      out_limit = allowance - err.size();
    } else {
      out_limit = half;
      err_limit = half;
    }
  }
  *out_cut = out.size() > out_limit;
  *err_cut = err.size() > err_limit;
  if (*out_cut) out = std::string(Utf8Prefix(out, out_limit));
  if (*err_cut) err = std::string(Utf8Prefix(err, err_limit));
}

std::string SignalName(int signo) {
  switch (signo) {
    case 9:
      return "SIGKILL";
    case 15:
      return "SIGTERM";
    case 11:
      return "SIGSEGV";
    case 6:
      return "SIGABRT";
    case 2:
      return "SIGINT";
    default:
      return fmt::format("signal {}", signo);
  }
}

}  // namespace

std::optional<ErrorCode> RunErrorCode(const RunResult& run) {
  if (run.timed_out) return ErrorCode::kTimeout;
  if (run.oom) return ErrorCode::kOom;
  if (run.cancelled) return ErrorCode::kCancelled;
  return std::nullopt;
}

Json RunOutputSchema() {
  Json file = {{"type", "object"},
               {"properties",
                {{"path", {{"type", "string"}}},
                 {"filename", {{"type", "string"}}},
                 {"size", {{"type", "integer"}}},
                 {"mime_type", {{"type", "string"}}},
                 {"download_url", {{"type", "string"}}}}}};
  return OutputSchema(
      {{"session_id", {{"type", "string"}, {"description", "The session the code ran in"}}},
       {"session_created", {{"type", "boolean"}}},
       {"exit_code",
        {{"type", "integer"}, {"description", "0 on success; 1 for a Python exception"}}},
       {"stdout", {{"type", "string"}}},
       {"stderr", {{"type", "string"}}},
       {"stdout_truncated", {{"type", "boolean"}}},
       {"stderr_truncated", {{"type", "boolean"}}},
       {"timed_out", {{"type", "boolean"}}},
       {"state_lost",
        {{"type", "boolean"},
         {"description", "The interpreter was restarted: earlier variables are gone"}}},
       {"duration_s", {{"type", "number"}}},
       {"usage",
        {{"type", "object"},
         {"properties",
          {{"wall_seconds", {{"type", "number"}}},
           {"cpu_seconds", {{"type", "number"}}},
           {"memory_peak_bytes", {{"type", "integer"}}},
           {"memory_peak_scope", {{"type", "string"}, {"enum", {"call", "session"}}}}}},
         {"description",
          "What the call used: wall time, the sandbox's CPU seconds, and the memory peak of "
          "this call (scope call) or, where the kernel cannot reset it, of the session so far "
          "(scope session)"}}},
       {"resumed",
        {{"type", "boolean"},
         {"description", "The session was hibernated and was resumed for this call"}}},
       {"not_restored",
        {{"type", "array"},
         {"items", {{"type", "string"}}},
         {"description", "What the resume could not bring back: \"name (type): reason\""}}},
       {"artifacts",
        {{"type", "array"},
         {"items", file},
         {"description", "Files new or changed under /mnt/data during the run"}}},
       {"figures",
        {{"type", "array"},
         {"items", {{"type", "string"}}},
         {"description", "Where the returned figures were saved"}}}},
      {"session_id", "exit_code", "stdout", "stderr"});
}

Json RunToolResult(ToolContext& context, ToolCall& call, const RunResult& run,
                   const RunPresentation& presentation) {
  const ToolSettings& settings = context.settings;
  ToolResultBuilder builder(settings.max_result_bytes);
  std::optional<ErrorCode> error = RunErrorCode(run);

  // stdout and stderr appear twice (text and structuredContent): each copy gets under half.
  size_t allowance = settings.max_result_bytes > (24u << 10)
                         ? static_cast<size_t>(settings.max_result_bytes / 2 - (8u << 10))
                         : 4096;
  std::string out = ValidUtf8(run.stdout_text);
  std::string err = ValidUtf8(run.stderr_text);
  bool out_cut = false;
  bool err_cut = false;
  FitOutputs(out, err, allowance, &out_cut, &err_cut);

  std::vector<std::string> notes = presentation.notes;
  std::string error_message;
  if (run.timed_out) {
    error_message = fmt::format("the run exceeded its time limit of {} s and was stopped; {}",
                                presentation.timeout_s,
                                run.state_lost ? "the worker had to be killed, so the session's "
                                                 "Python state (variables, imports) was lost"
                                               : "the interpreter was interrupted and its state "
                                                 "was kept");
  } else if (run.oom) {
    error_message = fmt::format(
        "the run was killed for exceeding the session's memory limit; the Python state was "
        "lost (files in /mnt/data remain)");
  } else if (run.cancelled) {
    error_message = "the run was cancelled";
  }
  if (run.state_lost && !run.timed_out && !run.oom) {
    notes.push_back(
        "The Python worker was restarted: variables, imports and figures from earlier runs are "
        "gone (files in /mnt/data remain).");
  }
  if (run.resumed) {
    std::string lost;
    for (const auto& item : run.not_restored) lost += "\n  " + ValidUtf8(item);
    notes.push_back(run.not_restored.empty()
                        ? std::string("The session was hibernated and has been resumed: its "
                                      "files and Python state are restored.")
                        : "The session was hibernated and has been resumed; not restored (redo "
                          "these):" +
                              lost);
  }
  if (run.worker_killed && !run.oom && run.term_signal != 0) {
    notes.push_back(fmt::format("The worker was killed by {}.", SignalName(run.term_signal)));
  }
  std::string cap = FormatBytes(settings.max_output_bytes);
  if (run.stdout_truncated) {
    notes.push_back(
        fmt::format("stdout was cut at {} (SANDBOX_MAX_OUTPUT_BYTES); write large "
                    "output to a file in /mnt/data instead.",
                    cap));
  }
  if (run.stderr_truncated) {
    notes.push_back(fmt::format("stderr was cut at {} (SANDBOX_MAX_OUTPUT_BYTES).", cap));
  }
  if (out_cut || err_cut) {
    notes.push_back(
        fmt::format("Output was shortened to fit the result limit of {} "
                    "(SANDBOX_MAX_RESULT_BYTES).",
                    FormatBytes(settings.max_result_bytes)));
  }

  std::set<std::string> figure_paths;
  for (const auto& figure : run.figures) figure_paths.insert(figure.path);

  // --- The text block.
  std::string text;
  if (error) text += fmt::format("Error ({}): {}\n", ErrorCodeName(*error), error_message);
  text += fmt::format("exit_code: {} · {:.2f} s · session {}\n", run.exit_code, run.duration_s,
                      presentation.session_id);
  if (presentation.session_created && !presentation.embed_artifacts) {
    text += fmt::format("A new session was created: pass session_id \"{}\" to keep its state.\n",
                        presentation.session_id);
  }
  for (const auto& note : notes) text += "Note: " + note + "\n";
  if (out.empty() && err.empty()) text += "(no output)\n";
  if (!out.empty()) {
    text += "--- stdout ---\n" + out;
    if (out.back() != '\n') text += '\n';
  }
  if (!err.empty()) {
    text += "--- stderr ---\n" + err;
    if (err.back() != '\n') text += '\n';
  }
  if (!run.artifacts.empty()) {
    text += "Artifacts (new or changed under /mnt/data):\n";
    size_t shown = 0;
    for (const auto& artifact : run.artifacts) {
      if (++shown > kMaxArtifactsShown) {
        text += fmt::format("  … and {} more (sandbox_list_artifacts lists them all)\n",
                            run.artifacts.size() - kMaxArtifactsShown);
        break;
      }
      text += fmt::format("  {}  {}  {}\n", ValidUtf8(artifact.path), FormatBytes(artifact.size),
                          artifact.mime_type);
    }
  }
  if (!run.figures.empty()) {
    text += fmt::format("Figures: {} returned below as images (also saved in /mnt/data).\n",
                        run.figures.size());
  }
  if (presentation.embed_artifacts) text += "The one-shot session is closed.\n";
  builder.AddText(text);

  // --- Figures, then image artifacts, then other artifacts.
  auto result_file = [&](const FileInfo& info) {
    ResultFile file = MakeResultFile(call, presentation.session_id, info);
    if (presentation.embed_artifacts) file.download_url.clear();
    return file;
  };
  Json figure_list = Json::array();
  for (const auto& figure : run.figures) {
    FileInfo info;
    info.path = figure.path;
    info.size = figure.png.size();
    info.mime_type = "image/png";
    builder.AddImage(figure.png, "image/png", result_file(info));
    figure_list.push_back(ValidUtf8(figure.path));
  }
  size_t images = 0;
  size_t handled = 0;
  Json artifact_list = Json::array();
  for (const auto& artifact : run.artifacts) {
    ResultFile file = result_file(artifact);
    artifact_list.push_back(FileJson(file));
    if (artifact.is_dir || figure_paths.count(artifact.path) > 0) continue;
    if (++handled > kMaxArtifactsShown) continue;
    bool image = IsInlineImageMime(artifact.mime_type);
    uint64_t embed_limit = presentation.embed_artifacts     ? settings.max_result_bytes
                           : image                          ? kMaxInlineImageBytes
                           : IsTextMime(artifact.mime_type) ? kMaxEmbeddedTextBytes
                                                            : 0;
    if (image && images >= kMaxInlineImages) embed_limit = 0;
    if (artifact.size > 0 && artifact.size <= embed_limit) {
      auto content = context.sessions.ReadFile(presentation.session_id, artifact.path, embed_limit);
      if (content) {
        if (image) {
          builder.AddImage(*content, artifact.mime_type, file);
          ++images;
        } else {
          builder.AddEmbeddedResource(file, *content);
        }
        continue;
      }
    }
    if (!presentation.embed_artifacts) builder.AddResourceLink(file);
  }

  Json structured = {{"session_id", presentation.session_id},
                     {"exit_code", run.exit_code},
                     {"stdout", out},
                     {"stderr", err},
                     {"stdout_truncated", run.stdout_truncated || out_cut},
                     {"stderr_truncated", run.stderr_truncated || err_cut},
                     {"timed_out", run.timed_out},
                     {"state_lost", run.state_lost},
                     {"duration_s", run.duration_s},
                     {"usage", RunUsageJson(run)},
                     {"artifacts", std::move(artifact_list)},
                     {"figures", std::move(figure_list)}};
  if (presentation.session_created) structured["session_created"] = true;
  if (run.resumed) {
    Json lost = Json::array();
    for (const auto& item : run.not_restored) lost.push_back(ValidUtf8(item));
    structured["resumed"] = true;
    structured["not_restored"] = std::move(lost);
  }
  if (error) {
    structured["error"] = ErrorCodeName(*error);
    structured["message"] = error_message;
    builder.MarkError();
  }
  builder.SetStructured(std::move(structured));
  return builder.Build();
}

}  // namespace sandbox::mcp::tools
