// cgroup v1 for real, on a v1/hybrid host as root (this kind of machine: memory, pids, cpu,
// cpuacct and freezer v1 hierarchies; a cgroup2 mount without controllers).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/runtime/cgroup/limits_behaviour.h"
#include "tests/support/test_support.h"

namespace sandbox::cgroup1_test {
namespace {

using testing::ScopedEnv;

// A cgroup v1 manager under a unique parent (removed when the fixture goes), or a skip.
class V1Fixture {
 public:
  V1Fixture() {
    if (::geteuid() != 0) testing::SkipTest("cgroup v1 needs root");
    auto mounts = cgroup::ReadCgroupMounts();
    bool memory_v1 = false;
    for (const auto& mount : mounts.value()) {
      for (const auto& c : mount.controllers) memory_v1 |= !mount.v2 && c == "memory";
    }
    if (!memory_v1) testing::SkipTest("no cgroup v1 memory hierarchy on this host");
    ScopedEnv env("SANDBOX_CGROUP", "cgroup1");
    manager_ = CgroupManager::Detect(testing::UniqueOwner());
    INFO(manager_->reason());
    REQUIRE(manager_->mode() == "cgroup1");
  }
  ~V1Fixture() { testing::RemoveParents(*manager_); }
  CgroupManager& manager() { return *manager_; }

 private:
  std::unique_ptr<CgroupManager> manager_;
};

TEST_CASE("cgroup1: detect picks v1 as root on a hybrid host", "[cgroup1][root]") {
  if (::geteuid() != 0) testing::SkipTest("needs root");
  auto manager = CgroupManager::Detect(testing::UniqueOwner());
  // With controllers on cgroup2 this host would be v2; this test is about v1/hybrid hosts.
  if (manager->mode() == "cgroup2") testing::SkipTest("this host has cgroup v2 controllers");
  INFO(manager->reason());
  CHECK(manager->mode() == "cgroup1");
  CHECK(manager->reason().find("cgroup v1 as root") != std::string::npos);
  CHECK(manager->reason().find("memory") != std::string::npos);
  EnforcedLimits plan = manager->Plan(Limits{});
  CHECK(plan.cgroup_mode == "cgroup1");
  for (const auto& limit : plan.limits) {
    if (limit.name == "memory" || limit.name == "pids" || limit.name == "cpu") {
      CHECK(limit.mechanism == LimitMechanism::kCgroup1);
    }
  }
  testing::RemoveParents(*manager);
}

TEST_CASE("cgroup1: limits are written to each hierarchy", "[cgroup1][root]") {
  V1Fixture fixture;
  Limits limits = testing::SmallLimits();
  auto group = fixture.manager().Create("sess_limits0000001", limits);
  REQUIRE(group.has_value());
  bool saw_memory = false;
  bool saw_pids = false;
  bool saw_cpu = false;
  for (const auto& dir : (*group)->paths()) {
    if (cgroup::PathExists(dir + "/memory.limit_in_bytes")) {
      saw_memory = true;
      CHECK(cgroup::ReadUint(dir + "/memory.limit_in_bytes").value() == limits.memory_bytes);
      if (cgroup::PathExists(dir + "/memory.memsw.limit_in_bytes")) {
        CHECK(cgroup::ReadUint(dir + "/memory.memsw.limit_in_bytes").value() ==
              limits.memory_bytes);
      }
    }
    if (cgroup::PathExists(dir + "/pids.max")) {
      saw_pids = true;
      CHECK(cgroup::ReadUint(dir + "/pids.max").value() == limits.pids);
    }
    if (cgroup::PathExists(dir + "/cpu.cfs_quota_us")) {
      saw_cpu = true;
      CHECK(cgroup::ReadControl(dir + "/cpu.cfs_quota_us").value() == "50000");
      CHECK(cgroup::ReadControl(dir + "/cpu.cfs_period_us").value() == "100000");
    }
  }
  CHECK(saw_memory);
  CHECK(saw_pids);
  CHECK(saw_cpu);
  CHECK((*group)->DirFd() == -1);  // no CLONE_INTO_CGROUP on v1
}

TEST_CASE("cgroup1: the sessions' parent weighs as much as its sessions", "[cgroup1][root]") {
  V1Fixture fixture;
  std::string cpu_parent;
  for (const std::string& dir : fixture.manager().parent_dirs()) {
    if (cgroup::PathExists(dir + "/cpu.shares")) cpu_parent = dir;
  }
  if (cpu_parent.empty()) testing::SkipTest("no v1 cpu hierarchy on this host");
  auto shares = [&] { return cgroup::ReadUint(cpu_parent + "/cpu.shares").value(); };
  std::vector<std::unique_ptr<SandboxCgroup>> groups;
  for (const char* id : {"sess_weight000001", "sess_weight000002", "sess_weight000003"}) {
    auto group = fixture.manager().Create(id, testing::SmallLimits());
    REQUIRE(group.has_value());
    groups.push_back(std::move(*group));
    CHECK(shares() == 1024 * groups.size());  // each session counts as one process would
  }
  // A session lowered to background priority between its calls weighs as a process of its
  // shares would: next to nothing (issue #28: importing sandboxes must not outweigh the server's
  // own threads). One started at background (the pool's, before any process) still counts.
  REQUIRE(groups[1]->SetCpuPriority(CpuPriority::kBackground));
  CHECK(shares() == 3072);
  REQUIRE(groups[1]->SetCpuPriority(CpuPriority::kNormal));
  pid_t child = ::fork();  // a process in the group: from then on it is a session's
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  REQUIRE(child > 0);
  REQUIRE(groups[0]->Attach(child));
  REQUIRE(groups[0]->SetCpuPriority(CpuPriority::kBackground));
  CHECK(shares() == 2048);
  REQUIRE(groups[0]->SetCpuPriority(CpuPriority::kBackground));  // idempotent
  CHECK(shares() == 2048);
  REQUIRE(groups[0]->SetCpuPriority(CpuPriority::kNormal));
  CHECK(shares() == 3072);
  REQUIRE(groups[0]->SetCpuPriority(CpuPriority::kBackground));
  REQUIRE(groups[0]->Destroy());  // destroyed at background (its child killed): no longer
  ::waitpid(child, nullptr, 0);   // subtracted either
  CHECK(shares() == 2048);
  REQUIRE((*groups.back()).Destroy());
  CHECK(shares() == 1024);
  groups.clear();
  CHECK(shares() == 1024);  // never below one process's share
}

TEST_CASE("cgroup1: memory past the limit is OOM-killed and counted", "[cgroup1][root]") {
  V1Fixture fixture;
  testing::CheckMemoryLimitKills(fixture.manager());
}

TEST_CASE("cgroup1: fork past pids.max fails with EAGAIN", "[cgroup1][root]") {
  V1Fixture fixture;
  testing::CheckPidsLimit(fixture.manager());
}

TEST_CASE("cgroup1: KillAll empties the group and Destroy removes it", "[cgroup1][root]") {
  V1Fixture fixture;
  testing::CheckKillAllAndDestroy(fixture.manager());
}

TEST_CASE("cgroup1: a background group yields the CPU until raised", "[cgroup1][root]") {
  V1Fixture fixture;
  testing::CheckBackgroundCpuPriority(fixture.manager());
}

// What the background CPU cap costs (issue #38): a call's begin and end on the request thread,
// and the cap thread's writes when the first call begins and 10 ms after the last one ends, with
// 1 and 50 background groups. Prints figures; checks only that the cap was applied and lifted.
TEST_CASE("cgroup1: what the background CPU cap costs a call", "[cgroup1][root]") {
  V1Fixture fixture;
  using Clock = std::chrono::steady_clock;
  auto& cap = cgroup::BackgroundCpuCap::Instance();
  std::vector<std::unique_ptr<SandboxCgroup>> groups;
  std::string figures;
  for (size_t members : {size_t{1}, size_t{50}}) {
    while (groups.size() < members) {
      auto group = fixture.manager().Create(fmt::format("sess_capcost{:06}", groups.size()),
                                            testing::SmallLimits());
      REQUIRE(group.has_value());
      REQUIRE((*group)->SetCpuPriority(CpuPriority::kBackground).has_value());
      groups.push_back(std::move(*group));
    }
    cap.Settle();
    constexpr int kCalls = 2000;
    auto began = Clock::now();
    for (int i = 0; i < kCalls; ++i) {
      cap.ForegroundBegins();  // the first: a wake-up of the cap's thread each time
      cap.ForegroundEnds();
    }
    double pair_us =
        std::chrono::duration<double, std::micro>(Clock::now() - began).count() / kCalls;
    cap.Settle();
    auto capping = Clock::now();
    cap.ForegroundBegins();
    cap.Settle();
    double cap_ms = std::chrono::duration<double, std::milli>(Clock::now() - capping).count();
    CHECK(cap.capped());
    auto lifting = Clock::now();
    cap.ForegroundEnds();
    cap.Settle();
    double lift_ms = std::chrono::duration<double, std::milli>(Clock::now() - lifting).count();
    CHECK_FALSE(cap.capped());
    figures += fmt::format(
        " {} group(s): a call's begin + end {:.2f} us on its thread; capping "
        "{:.2f} ms, lifting {:.2f} ms (10 ms of it the wait) on the cap's;",
        members, pair_us, cap_ms, lift_ms);
  }
  std::cerr << "[cgroup1] background cap cost:" << figures << "\n";
}

TEST_CASE("cgroup1: SweepOrphans removes a stale group with a live process", "[cgroup1][root]") {
  V1Fixture fixture;
  testing::CheckSweepOrphans(fixture.manager());
}

TEST_CASE("cgroup1: a failed Create leaves nothing behind", "[cgroup1][root]") {
  V1Fixture fixture;
  auto first = fixture.manager().Create("sess_dup000000001", testing::SmallLimits());
  REQUIRE(first.has_value());
  auto second = fixture.manager().Create("sess_dup000000001", testing::SmallLimits());
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().sys_errno == EEXIST);
  for (const auto& dir : (*first)->paths()) CHECK(cgroup::PathExists(dir));  // untouched
  CHECK_FALSE(fixture.manager().Create("../escape", testing::SmallLimits()).has_value());
}

TEST_CASE("cgroup1: create and destroy time", "[cgroup1][root]") {
  V1Fixture fixture;
  double us = testing::MeasureCreateDestroy(fixture.manager(), 20);
  CHECK(us < 200000);  // a sanity bound, not a benchmark: 0.2 s per group would be broken
}

}  // namespace
}  // namespace sandbox::cgroup1_test
