#include "runtime/session/session_hibernation.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace sandbox {

namespace {

// runtime/agent/session_state.py's names.
constexpr std::string_view kArchiveName = ".sandbox-session-state.tar";
constexpr std::string_view kRestoreName = ".sandbox-session-restore.tar";
// A report is a few lines of JSON; this bounds what a hostile cell can make us hold.
constexpr uint64_t kMaxReportOutput = 1 << 20;

// A cell that calls the worker's hook: a single expression of value None, so it prints nothing
// and binds nothing (not even `_`) in the session's namespace.
std::string HookCell(std::string_view action, std::string_view argument) {
  return fmt::format("__import__(\"sys\").modules[\"_sandbox_worker\"]._session_state(\"{}\", {})",
                     action, argument);
}

// A Python string literal: JSON's escapes (\" \\ \uXXXX) are Python's too.
std::string PythonString(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Why a hook cell failed, for the error message: the exception it ended with (the last line
// of its traceback, "ValueError: ..."), or the worker's death (killed, e.g. out of memory:
// the session's variables are gone with it).
std::string HookFailure(const RunResult& run) {
  constexpr size_t kMaxLine = 600;
  std::string text = run.stderr_text;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t newline = text.rfind('\n');
  std::string last = newline == std::string::npos ? text : text.substr(newline + 1);
  if (last.size() > kMaxLine) last.resize(kMaxLine);
  if (run.state_lost) {
    return "the session's Python worker died (killed, e.g. out of memory); its variables are "
           "lost" +
           (last.empty() ? std::string() : ": " + last);
  }
  return last.empty() ? std::string("no error output") : last;
}

// Milliseconds since `since`, for the phase timings in the debug log (tools/bench.d/hibernate.sh
// reads where the time of a save or a restore goes).
int64_t MsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

Result<RunResult> RunHook(AgentClient& agent, std::string code, double timeout_s) {
  RunRequest request;
  request.code = std::move(code);
  request.timeout_s = timeout_s;
  request.max_output_bytes = kMaxReportOutput;
  return agent.Run(request);
}

}  // namespace

bool StateLostInSave(const Error& error) {
  return std::any_of(error.details.begin(), error.details.end(),
                     [](const auto& detail) { return detail.first == kStateLostDetail; });
}

Result<SavedArchive> SaveSessionState(AgentClient& agent, uint64_t max_bytes, double timeout_s) {
  const std::string path = agent.info().tmp_dir + "/" + std::string(kArchiveName);
  auto started = std::chrono::steady_clock::now();
  SBX_ASSIGN_OR_RETURN(RunResult run,
                       RunHook(agent, HookCell("save", std::to_string(max_bytes)), timeout_s));
  if (run.exit_code != 0 || run.timed_out || run.state_lost) {
    ErrorCode code = run.stderr_text.find("larger than its cap") != std::string::npos ||
                             run.stderr_text.find("above its cap") != std::string::npos
                         ? ErrorCode::kArtifactTooLarge
                         : ErrorCode::kSandboxUnavailable;
    Error error = MakeError(code, "saving the session failed{}: {}",
                            run.timed_out ? " (timed out)" : "", HookFailure(run));
    if (run.state_lost) error.details.emplace_back(kStateLostDetail, "true");
    return Fail(std::move(error));
  }
  SavedArchive saved;
  SBX_ASSIGN_OR_RETURN(saved.save, ParseSaveReport(run.stdout_text));
  const int64_t saved_ms = MsSince(started);
  started = std::chrono::steady_clock::now();
  auto bytes = agent.ReadFile(path, max_bytes);
  const int64_t read_ms = MsSince(started);
  // Removed whatever happened: a session that goes on does not keep the copy in its memory.
  (void)RunHook(agent, HookCell("discard", PythonString(path)), timeout_s);
  if (!bytes) {
    return Fail(std::move(bytes.error()).Context("reading the saved session"));
  }
  saved.bytes = std::move(*bytes);
  spdlog::debug("session state: saved in the sandbox in {} ms, {} bytes read out in {} ms",
                saved_ms, saved.bytes.size(), read_ms);
  return saved;
}

Result<RestoreReport> RestoreSessionState(AgentClient& agent, std::string_view archive,
                                          double timeout_s) {
  const std::string path = agent.info().tmp_dir + "/" + std::string(kRestoreName);
  auto started = std::chrono::steady_clock::now();
  SBX_TRY(agent.WriteFile(path, archive, /*overwrite=*/true));
  const int64_t write_ms = MsSince(started);
  started = std::chrono::steady_clock::now();
  SBX_ASSIGN_OR_RETURN(RunResult run,
                       RunHook(agent, HookCell("restore", PythonString(path)), timeout_s));
  if (run.exit_code != 0 || run.timed_out || run.state_lost) {
    return Fail(ErrorCode::kSandboxUnavailable, "restoring the saved session failed{}: {}",
                run.timed_out ? " (timed out)" : "", HookFailure(run));
  }
  spdlog::debug("session state: {} bytes written into the sandbox in {} ms, restored in {} ms",
                archive.size(), write_ms, MsSince(started));
  return ParseRestoreReport(run.stdout_text);
}

}  // namespace sandbox
