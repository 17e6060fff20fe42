#include "seccomp/docker_profile.h"

#include <cerrno>

#include "seccomp/policy.h"

namespace sandbox::seccomp {
namespace {

// The errno a conditional refusal carries under Docker when the policy gives it the default
// errno (see the header): EACCES, which Python raises as the same PermissionError as EPERM.
int DistinctRefusalErrno(int default_errno) { return default_errno == EACCES ? EPERM : EACCES; }

}  // namespace

nlohmann::json DockerProfile(const PolicySpec& spec) {
  nlohmann::json syscalls = nlohmann::json::array();
  for (const SyscallRule& rule : spec.rules) {
    const bool refuses_like_default =
        rule.action == Action::kErrno && rule.errno_value == spec.default_errno;
    // runc would drop a conditional one, and the call's allow rule would then let it through.
    const int errno_value = refuses_like_default && !rule.args.empty()
                                ? DistinctRefusalErrno(spec.default_errno)
                                : rule.errno_value;

    nlohmann::json entry = {{"names", rule.names}, {"action", ActionName(rule.action)}};
    if (rule.action == Action::kErrno) entry["errnoRet"] = errno_value;
    if (!rule.args.empty()) {
      nlohmann::json args = nlohmann::json::array();
      for (const ArgCondition& arg : rule.args) {
        args.push_back({{"index", arg.index},
                        {"value", arg.value},
                        {"valueTwo", arg.value_two},
                        {"op", CmpName(arg.op)}});
      }
      entry["args"] = std::move(args);
    }
    if (!rule.why.empty()) entry["comment"] = rule.why;
    syscalls.push_back(std::move(entry));
  }
  return nlohmann::json{{"defaultAction", "SCMP_ACT_ERRNO"},
                        {"defaultErrnoRet", spec.default_errno},
                        {"architectures", nlohmann::json::array({"SCMP_ARCH_X86_64"})},
                        {"syscalls", std::move(syscalls)}};
}

std::string DockerProfileJson() { return DockerProfile(SandboxPolicy()).dump(); }

}  // namespace sandbox::seccomp
