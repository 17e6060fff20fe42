// cgroup v2 for real. On hosts whose controllers are on v1 (this kind of machine) these skip;
// the ctest "cgroup2_tests: in a cgroup v2 VM" runs them inside ../shared/tools/run-in-vm,
// as root (from the root cgroup, and [service] from a service-like cgroup /svc) and as uid 1000
// through a delegated subtree (tests tagged [delegated]).
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/runtime/cgroup/limits_behaviour.h"
#include "tests/support/test_support.h"

namespace sandbox {
namespace {

bool InVm() { return std::getenv("IN_VM") != nullptr; }

// A cgroup v2 manager under a unique parent (removed when the fixture goes), or a skip when
// this host has no v2 controllers. Inside the VM an unusable v2 is a failure, not a skip.
class V2Fixture {
 public:
  V2Fixture() {
    testing::ScopedEnv env("SANDBOX_CGROUP", "cgroup2");
    manager_ = CgroupManager::Detect(testing::UniqueOwner());
    if (manager_->mode() != "cgroup2") {
      INFO(manager_->reason());
      if (InVm()) FAIL("cgroup v2 unusable inside the VM: " << manager_->reason());
      testing::SkipTest("no cgroup v2 controllers on this host; run through run-in-vm (" +
                        manager_->reason() + ")");
    }
  }
  ~V2Fixture() { testing::RemoveParents(*manager_); }
  CgroupManager& manager() { return *manager_; }

 private:
  std::unique_ptr<CgroupManager> manager_;
};

TEST_CASE("cgroup2: detect, as root or through a delegated subtree",
          "[cgroup2][delegated][service]") {
  auto own_before = cgroup::V2PathOf(cgroup::ReadProcCgroup().value());
  V2Fixture fixture;
  const std::string reason = fixture.manager().reason();
  INFO(reason);
  if (::geteuid() == 0) {
    CHECK(reason.find("as root") != std::string::npos);
    // Root uses the top of the hierarchy, wherever it runs (a service's cgroup, or "/"), and
    // never moves itself.
    std::string parent = fixture.manager().parent_dirs().front();
    CHECK(parent.substr(0, parent.rfind('/')) == "/sys/fs/cgroup");
    CHECK(cgroup::V2PathOf(cgroup::ReadProcCgroup().value()) == own_before);
  } else {
    CHECK(reason.find("delegated to uid " + std::to_string(::geteuid())) != std::string::npos);
    // We left our delegated cgroup for its leaf "server" so controllers could be enabled in it.
    auto own = cgroup::V2PathOf(cgroup::ReadProcCgroup().value());
    REQUIRE(own.has_value());
    CHECK(own->size() > 7);
    CHECK(own->substr(own->size() - 7) == "/server");
  }
  EnforcedLimits plan = fixture.manager().Plan(Limits{});
  CHECK(plan.cgroup_mode == "cgroup2");
  for (const auto& limit : plan.limits) {
    if (limit.name == "memory" || limit.name == "pids" || limit.name == "cpu" ||
        limit.name == "swap") {
      INFO(limit.name << ": " << limit.note);
      CHECK(limit.mechanism == LimitMechanism::kCgroup2);
    }
  }
}

TEST_CASE("cgroup2: limits are written", "[cgroup2][delegated]") {
  V2Fixture fixture;
  Limits limits = testing::SmallLimits();
  auto group = fixture.manager().Create("sess_limits0000001", limits);
  REQUIRE(group.has_value());
  const std::string dir = (*group)->paths().front();
  CHECK(cgroup::ReadUint(dir + "/memory.max").value() == limits.memory_bytes);
  CHECK(cgroup::ReadUint(dir + "/memory.swap.max").value() == 0);
  CHECK(cgroup::ReadUint(dir + "/pids.max").value() == limits.pids);
  CHECK(cgroup::ReadControl(dir + "/cpu.max").value() == "50000 100000");
  // Not oom.group: the OOM killer takes the worker, the sandbox's init survives.
  CHECK(cgroup::ReadControl(dir + "/memory.oom.group").value() == "0");
  CHECK((*group)->DirFd() >= 0);
}

TEST_CASE("cgroup2: clone3 CLONE_INTO_CGROUP through DirFd", "[cgroup2][delegated]") {
  V2Fixture fixture;
  auto group = fixture.manager().Create("sess_clone3000001", testing::SmallLimits());
  REQUIRE(group.has_value());
  struct clone_args args {};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>((*group)->DirFd());
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    // The child starts in the group: nothing else to do but wait to be looked at.
    for (;;) ::pause();
  }
  REQUIRE(pid > 0);
  auto procs = cgroup::ReadPids((*group)->paths().front() + "/cgroup.procs");
  ::kill(static_cast<pid_t>(pid), SIGKILL);
  ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
  REQUIRE(procs.has_value());
  CHECK(*procs == std::vector<pid_t>{static_cast<pid_t>(pid)});
}

TEST_CASE("cgroup2: memory past the limit is OOM-killed and counted",
          "[cgroup2][delegated][service]") {
  V2Fixture fixture;
  testing::CheckMemoryLimitKills(fixture.manager());
}

TEST_CASE("cgroup2: fork past pids.max fails with EAGAIN", "[cgroup2][delegated]") {
  V2Fixture fixture;
  testing::CheckPidsLimit(fixture.manager());
}

TEST_CASE("cgroup2: cgroup.kill empties the group and Destroy removes it",
          "[cgroup2][delegated][service]") {
  V2Fixture fixture;
  testing::CheckKillAllAndDestroy(fixture.manager());
}

TEST_CASE("cgroup2: SweepOrphans removes a stale group with a live process",
          "[cgroup2][delegated]") {
  V2Fixture fixture;
  testing::CheckSweepOrphans(fixture.manager());
}

TEST_CASE("cgroup2: a background group yields the CPU until raised", "[cgroup2][delegated]") {
  V2Fixture fixture;
  testing::CheckBackgroundCpuPriority(fixture.manager());
}

TEST_CASE("cgroup2: create and destroy time", "[cgroup2][delegated]") {
  V2Fixture fixture;
  double us = testing::MeasureCreateDestroy(fixture.manager(), 10);
  CHECK(us < 500000);  // a sanity bound under software emulation, not a benchmark
}

}  // namespace
}  // namespace sandbox
