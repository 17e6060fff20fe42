#include "runtime/docker/engine_error.h"

#include <nlohmann/json.hpp>

#include "runtime/base/json_parse.h"

namespace sandbox::docker {

Error EngineError(std::string_view what, long status, std::string_view body) {
  std::string message;
  auto bounded = ParseJsonBounded(body);
  nlohmann::json parsed = bounded ? std::move(*bounded) : nlohmann::json();
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    message = parsed["message"].get<std::string>();
  } else {
    message = std::string(body.substr(0, 300));
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
      message.pop_back();
    }
  }
  ErrorCode code = status == 404 ? ErrorCode::kNotFound : ErrorCode::kSandboxUnavailable;
  return MakeError(code, "{}: Docker daemon answered {}: {}", what, status, message);
}

}  // namespace sandbox::docker
