#include "runtime/agent/run_messages.h"

#include <utility>

#include "runtime/base/base64.h"

namespace sandbox::agent {

Json RunRequestMessage::ToJson(uint64_t id) const {
  return Json{{"type", "run"},
              {"id", id},
              {"kind", kind},
              {"code", code},
              {"fresh", fresh},
              {"timeout_s", timeout_s},
              {"max_output_bytes", max_output_bytes},
              {"cwd", cwd}};
}

RunRequestMessage RunRequestMessage::FromJson(const Json& message) {
  RunRequestMessage defaults;
  return RunRequestMessage{
      .kind = GetString(message, "kind", defaults.kind),
      .code = GetString(message, "code"),
      .fresh = GetBool(message, "fresh"),
      .timeout_s = GetDouble(message, "timeout_s", defaults.timeout_s),
      .max_output_bytes = GetUint(message, "max_output_bytes", defaults.max_output_bytes),
      .cwd = GetString(message, "cwd")};
}

Json OutputEvent::ToJson(uint64_t id) const {
  return Json{{"type", "output"}, {"id", id}, {"stream", stream}};
}

OutputEvent OutputEvent::FromJson(const Json& message) {
  return OutputEvent{.stream = static_cast<int>(GetInt(message, "stream"))};
}

Json CancelRequest::ToJson(uint64_t run_id) const {
  return Json{{"type", "cancel"}, {"id", run_id}};
}

Json RunResultMessage::ToJson(uint64_t id) const {
  Json artifact_list = Json::array();
  for (const auto& artifact : artifacts) artifact_list.push_back(artifact.ToJson(false));
  Json figure_list = Json::array();
  for (const auto& figure : figures) {
    figure_list.push_back(Json{{"path", figure.path}, {"png", Base64Encode(figure.png)}});
  }
  Json disk = Json::object();
  if (data_bytes) disk["data_bytes"] = *data_bytes;
  if (tmp_bytes) disk["tmp_bytes"] = *tmp_bytes;
  Json json{{"type", "result"},
            {"id", id},
            {"exit_code", exit_code},
            {"stdout", Base64Encode(stdout_bytes)},
            {"stderr", Base64Encode(stderr_bytes)},
            {"stdout_truncated", stdout_truncated},
            {"stderr_truncated", stderr_truncated},
            {"timed_out", timed_out},
            {"cancelled", cancelled},
            {"state_lost", state_lost},
            {"worker_killed", worker_killed},
            {"term_signal", term_signal},
            {"duration_s", duration_s},
            {"artifacts", std::move(artifact_list)},
            {"figures", std::move(figure_list)},
            {"disk", std::move(disk)}};
  if (preload_pending) json["preload_pending"] = *preload_pending;
  return json;
}

Result<RunResultMessage> RunResultMessage::FromJson(const Json& message) {
  RunResultMessage result;
  SBX_ASSIGN_OR_RETURN(result.stdout_bytes, GetBytes(message, "stdout"));
  SBX_ASSIGN_OR_RETURN(result.stderr_bytes, GetBytes(message, "stderr"));
  result.exit_code = static_cast<int>(GetInt(message, "exit_code"));
  result.stdout_truncated = GetBool(message, "stdout_truncated");
  result.stderr_truncated = GetBool(message, "stderr_truncated");
  result.timed_out = GetBool(message, "timed_out");
  result.cancelled = GetBool(message, "cancelled");
  result.state_lost = GetBool(message, "state_lost");
  result.worker_killed = GetBool(message, "worker_killed");
  result.term_signal = static_cast<int>(GetInt(message, "term_signal"));
  result.duration_s = GetDouble(message, "duration_s");
  if (auto it = message.find("preload_pending"); it != message.end() && it->is_boolean()) {
    result.preload_pending = it->get<bool>();
  }
  if (auto disk = message.find("disk"); disk != message.end() && disk->is_object()) {
    for (auto [name, field] :
         {std::pair{"data_bytes", &result.data_bytes}, std::pair{"tmp_bytes", &result.tmp_bytes}}) {
      auto it = disk->find(name);
      if (it != disk->end() && it->is_number_unsigned()) *field = it->get<uint64_t>();
    }
  }
  if (auto it = message.find("artifacts"); it != message.end() && it->is_array()) {
    for (const auto& entry : *it) result.artifacts.push_back(EntryMessage::FromJson(entry));
  }
  if (auto it = message.find("figures"); it != message.end() && it->is_array()) {
    for (const auto& entry : *it) {
      FigureMessage figure{.path = GetString(entry, "path"), .png = {}};
      SBX_ASSIGN_OR_RETURN(figure.png, GetBytes(entry, "png"));
      result.figures.push_back(std::move(figure));
    }
  }
  return result;
}

}  // namespace sandbox::agent
