#include "tools/cli/run_result.h"

namespace sandbox::cli {

int RunExitCode(const RunResult& result, bool interrupted) {
  if (result.timed_out) return kExitTimeout;
  if (result.oom || result.worker_killed) return kExitKilled;
  if (result.cancelled || interrupted) return kExitInterrupted;
  return result.exit_code;
}

nlohmann::json Utf8Json(const std::string& text) {
  // dump() with the replace handler is the one nlohmann call that repairs UTF-8; parsing its
  // output back gives the repaired string as a value.
  return nlohmann::json::parse(
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

nlohmann::json RunResultJson(const RunResult& result, int exit_code) {
  nlohmann::json out;
  out["exit_code"] = exit_code;
  out["stdout"] = Utf8Json(result.stdout_text);
  out["stderr"] = Utf8Json(result.stderr_text);
  out["stdout_truncated"] = result.stdout_truncated;
  out["stderr_truncated"] = result.stderr_truncated;
  out["timed_out"] = result.timed_out;
  out["oom"] = result.oom;
  out["duration_s"] = result.duration_s;
  out["artifacts"] = nlohmann::json::array();
  for (const auto& file : result.artifacts) {
    out["artifacts"].push_back(
        {{"path", Utf8Json(file.path)}, {"size", file.size}, {"mime_type", file.mime_type}});
  }
  return out;
}

}  // namespace sandbox::cli
