#include "runtime/docker/daemon_runtime.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace sandbox::docker {
namespace {

std::string MissingRuntime(const DaemonInfo& info, const std::string& runtime) {
  std::string have;
  for (const auto& [name, path] : info.runtimes) have += (have.empty() ? "" : ", ") + name;
  return fmt::format(
      "the Docker daemon has no runtime '{}' (SANDBOX_DOCKER_RUNTIME; it has: {}): register it "
      "with `dockerd --add-runtime {}=/usr/bin/{}` or in daemon.json's \"runtimes\" and reload "
      "the daemon, or unset SANDBOX_DOCKER_RUNTIME for its default (docs/docker.md)",
      runtime, have.empty() ? "none listed" : have, runtime, runtime);
}

}  // namespace

bool IsRunscRuntime(const std::string& runtime) {
  return runtime.find("runsc") != std::string::npos;
}

Status RequireRuntime(const DaemonInfo& info, const std::string& runtime) {
  if (runtime.empty() || info.runtimes.count(runtime) > 0) return {};
  return Fail(ErrorCode::kSandboxUnavailable, "{}", MissingRuntime(info, runtime));
}

Error ExplainCreateError(Error error, const std::string& runtime) {
  if (runtime.empty()) return error;
  // The daemon's words: "Unknown runtime specified X" (API 1.41, 20.10), "unknown or invalid
  // runtime name: X" (newer releases).
  std::string lower = error.message;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("unknown runtime") == std::string::npos &&
      lower.find("invalid runtime") == std::string::npos) {
    return error;
  }
  return MakeError(ErrorCode::kSandboxUnavailable, "{}",
                   fmt::format("the Docker daemon has no runtime '{}' (SANDBOX_DOCKER_RUNTIME): "
                               "register it with `dockerd --add-runtime {}=/usr/bin/{}` or in "
                               "daemon.json's \"runtimes\" and reload the daemon, or unset "
                               "SANDBOX_DOCKER_RUNTIME (docs/docker.md); the daemon said: {}",
                               runtime, runtime, runtime, error.message));
}

std::string DescribeRuntime(const DaemonInfo& info, const std::string& runtime) {
  if (runtime.empty()) {
    return fmt::format("the daemon's default ({})",
                       info.default_runtime.empty() ? "unknown" : info.default_runtime);
  }
  auto it = info.runtimes.find(runtime);
  if (it == info.runtimes.end()) return MissingRuntime(info, runtime);
  return fmt::format("{} (registered: {})", runtime, it->second);
}

}  // namespace sandbox::docker
