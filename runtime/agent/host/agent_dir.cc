#include "runtime/agent/host/agent_dir.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

namespace sandbox {

namespace {

bool HasAgentFiles(const std::string& dir) {
  return ::access((dir + "/sandbox-init").c_str(), X_OK) == 0 &&
         ::access((dir + "/worker.py").c_str(), R_OK) == 0;
}

}  // namespace

Result<std::string> FindAgentDir() {
  if (const char* env = ::getenv("SANDBOX_AGENT_DIR"); env != nullptr && *env != '\0') {
    if (!HasAgentFiles(env)) {
      return Fail(ErrorCode::kNotFound, "SANDBOX_AGENT_DIR={} lacks sandbox-init or worker.py",
                  env);
    }
    return std::string(env);
  }
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    std::string dir = exe.substr(0, exe.rfind('/')) + "/agent";
    if (HasAgentFiles(dir)) return dir;
  }
  if (HasAgentFiles(SANDBOX_AGENT_BUILD_DIR)) return std::string(SANDBOX_AGENT_BUILD_DIR);
  return Fail(ErrorCode::kNotFound,
              "no agent files (sandbox-init, worker.py) next to the executable or in {}",
              SANDBOX_AGENT_BUILD_DIR);
}

}  // namespace sandbox
