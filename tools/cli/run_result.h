// What `mcp-sandbox run` makes of a RunResult, one home for the single run and the batch: the
// exit code a CI runner reads (the snippet's own, 124 timed out, 137 killed, 130 interrupted)
// and the JSON fields of a result (`run --json`, one line of `run --batch`).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/run.h"

namespace sandbox::cli {

inline constexpr int kExitTimeout = 124;
inline constexpr int kExitKilled = 137;
inline constexpr int kExitInterrupted = 130;

// The snippet's exit code as `run` reports it; `interrupted`: the runner itself was stopped.
int RunExitCode(const RunResult& result, bool interrupted);

// {"exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "timed_out", "oom",
//  "duration_s", "artifacts": [{"path", "size", "mime_type"}]}. Invalid UTF-8 in the output or
// a path is replaced (U+FFFD), so the JSON is always valid.
nlohmann::json RunResultJson(const RunResult& result, int exit_code);

// `text` as a JSON string, invalid UTF-8 replaced.
nlohmann::json Utf8Json(const std::string& text);

}  // namespace sandbox::cli
