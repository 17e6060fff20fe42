// Without root and without a delegated cgroup (uid 65534 on this host): mode "none", a reason,
// and a plan that names rlimits. The check runs in a child that drops to uid 65534.
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>

#include "runtime/cgroup/cgroup_limits.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/support/test_support.h"

namespace sandbox::unprivileged_test {
namespace {

constexpr uid_t kNobody = 65534;

// Runs `check` as uid 65534 (dropping from root in a child), or directly when not root.
testing::ChildOutcome AsUnprivileged(const std::function<int(int)>& check) {
  return testing::RunInChild([&](int out) {
    if (::geteuid() == 0 && !testing::DropTo(kNobody)) return 90;
    return check(out);
  });
}

TEST_CASE("unprivileged: no delegated cgroup gives mode none with a reason",
          "[cgroup][unprivileged]") {
  auto outcome = AsUnprivileged([](int out) {
    auto manager = CgroupManager::Detect(testing::UniqueOwner());
    testing::WriteString(out, manager->mode() + "\n" + manager->reason() + "\n");
    EnforcedLimits plan = manager->Plan(Limits{});
    for (const auto& limit : plan.limits) {
      testing::WriteString(out, limit.name + "=" + LimitMechanismName(limit.mechanism) + "\n");
    }
    auto group = manager->Create("sess_nobody000001", Limits{});
    if (!group || (*group)->DirFd() != -1 || !(*group)->Attach(::getpid())) return 2;
    return manager->parent_dirs().empty() ? 0 : 3;
  });
  INFO(outcome.output);
  REQUIRE(outcome.code == 0);
  if (outcome.output.rfind("cgroup2\n", 0) == 0) {
    testing::SkipTest("this host delegates a cgroup v2 subtree to uid 65534");
  }
  CHECK(outcome.output.rfind("none\n", 0) == 0);
  // The reason says why neither cgroup version is usable.
  CHECK(outcome.output.find("cgroup v1 needs root") != std::string::npos);
  CHECK(outcome.output.find("cgroup v2: ") != std::string::npos);
  CHECK(outcome.output.find("memory=rlimit") != std::string::npos);
  CHECK(outcome.output.find("cpu=none") != std::string::npos);
}

TEST_CASE("SANDBOX_CGROUP overrides and refuses bad values", "[cgroup][unprivileged]") {
  auto outcome = AsUnprivileged([](int out) {
    {
      testing::ScopedEnv env("SANDBOX_CGROUP", "none");
      auto manager = CgroupManager::Detect("mcp-sandbox-test");
      testing::WriteString(out, "none:" + manager->mode() + ":" + manager->reason() + "\n");
      if (!CgroupManager::Open("mcp-sandbox-test")) return 4;
    }
    {
      testing::ScopedEnv env("SANDBOX_CGROUP", "cgroup3");
      auto manager = CgroupManager::Detect("mcp-sandbox-test");
      testing::WriteString(out, "bad:" + manager->mode() + ":" + manager->reason() + "\n");
      auto strict = CgroupManager::Open("mcp-sandbox-test");
      if (strict) return 5;
      testing::WriteString(out, "bad-open:" + strict.error().message + "\n");
    }
    {
      // Forced cgroup1 without root: unusable, and Open() says so instead of running weaker.
      testing::ScopedEnv env("SANDBOX_CGROUP", "cgroup1");
      auto strict = CgroupManager::Open("mcp-sandbox-test");
      if (strict) return 6;
      testing::WriteString(out, "forced-open:" + strict.error().message + "\n");
    }
    return 0;
  });
  INFO(outcome.output);
  REQUIRE(outcome.code == 0);
  CHECK(outcome.output.find("none:none:SANDBOX_CGROUP=none") != std::string::npos);
  CHECK(outcome.output.find("bad:none:SANDBOX_CGROUP='cgroup3' is not one of") !=
        std::string::npos);
  CHECK(outcome.output.find("bad-open:SANDBOX_CGROUP='cgroup3'") != std::string::npos);
  CHECK(outcome.output.find("forced-open:SANDBOX_CGROUP=cgroup1 but cgroup v1 is unusable") !=
        std::string::npos);
}

}  // namespace
}  // namespace sandbox::unprivileged_test
