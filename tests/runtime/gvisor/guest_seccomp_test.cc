#include "runtime/gvisor/guest_seccomp.h"

#include <cerrno>
#include <string>

#include <catch2/catch.hpp>

namespace guest_seccomp_test {

using sandbox::gvisor::GuestSeccomp;

namespace {

// The action of the first unconditional rule naming `name`, or "" when none does.
std::string ActionFor(const nlohmann::json& profile, const std::string& name) {
  for (const auto& rule : profile["syscalls"]) {
    if (rule.contains("args")) continue;
    for (const auto& named : rule["names"]) {
      if (named == name) return rule["action"];
    }
  }
  return "";
}

}  // namespace

TEST_CASE("guest seccomp: the policy's refusals as EPERM, clone3 left to the Sentry", "[unit]") {
  nlohmann::json profile = GuestSeccomp();
  CHECK(profile["defaultAction"] == "SCMP_ACT_ERRNO");
  // runsc answers any errno rule with EPERM: none may name another errno.
  for (const auto& rule : profile["syscalls"]) {
    if (rule["action"] == "SCMP_ACT_ERRNO") CHECK(rule.value("errnoRet", EPERM) == EPERM);
  }
  CHECK(ActionFor(profile, "clone3") == "SCMP_ACT_ALLOW");
  CHECK(ActionFor(profile, "unshare") == "SCMP_ACT_ERRNO");
  CHECK(ActionFor(profile, "ptrace") == "SCMP_ACT_ERRNO");
  CHECK(ActionFor(profile, "read") == "SCMP_ACT_ALLOW");
}

}  // namespace guest_seccomp_test
