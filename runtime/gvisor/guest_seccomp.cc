#include "runtime/gvisor/guest_seccomp.h"

#include <cerrno>

#include "seccomp/docker_profile.h"
#include "seccomp/policy_spec.h"

namespace sandbox::gvisor {

nlohmann::json GuestSeccomp() {
  nlohmann::json profile = seccomp::DockerProfile(seccomp::SandboxPolicy());
  nlohmann::json kept = nlohmann::json::array();
  for (nlohmann::json& rule : profile["syscalls"]) {
    if (rule.value("action", "") == "SCMP_ACT_ERRNO" && rule.value("errnoRet", EPERM) != EPERM) {
      // Left to the Sentry, which answers it itself; leaving it out would give the default's
      // EPERM (clone3: glibc then starts no thread at all).
      rule["action"] = "SCMP_ACT_ALLOW";
      rule.erase("errnoRet");
    }
    kept.push_back(std::move(rule));
  }
  profile["syscalls"] = std::move(kept);
  return profile;
}

}  // namespace sandbox::gvisor
