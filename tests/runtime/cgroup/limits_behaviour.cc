#include "tests/runtime/cgroup/limits_behaviour.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/support/cpu_window.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {
namespace {

std::string ProcsFile(const SandboxCgroup& group) {
  return group.paths().front() + "/cgroup.procs";
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

// v2 cpu.weight or v1 cpu.shares, as text ("" where neither is found).
std::string WeightOf(const SandboxCgroup& group) {
  for (const auto& dir : group.paths()) {
    if (auto v2 = cgroup::ReadControl(dir + "/cpu.weight")) return *v2;
    if (auto v1 = cgroup::ReadControl(dir + "/cpu.shares")) return *v1;
  }
  return "";
}

int64_t MonotonicNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// What the raised group's processes tell the test, in memory shared across the fork, to the
// nanosecond: when the call's stand-in woke, and each time the busy process got a CPU back.
// (Its CPU time in cpuacct.usage / cpu.stat would say it a tick late: the kernel charges a
// running task at the tick.)
struct RaiseClocks {
  std::atomic<int64_t> call_woke_ns{0};
  std::atomic<int64_t> busy_ran_ns{0};  // the busy process's latest loop
  std::atomic<uint32_t> resumes{0};
  std::atomic<int64_t> resumed_ns[4096];  // a ring: the times it ran again after 0.2 ms off
};

void PinToCpu0() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

}  // namespace

void CheckBackgroundCpuPriority(CgroupManager& manager) {
  EnforcedLimits plan = manager.Plan(Limits{});
  bool cpu = false;
  for (const auto& limit : plan.limits) {
    cpu |= limit.name == "cpu" && limit.mechanism != LimitMechanism::kNone;
  }
  if (!cpu) SkipTest("no cpu controller for session groups: " + plan.reason);
  Limits limits = SmallLimits();
  limits.pids = 64;
  limits.cpus = 1.0;  // a whole CPU each: only the priorities decide who gets the one they share
  auto normal = manager.Create("sess_cpunormal0001", limits);
  REQUIRE(normal.has_value());
  auto background = manager.Create("sess_cpubackgrnd01", limits);
  REQUIRE(background.has_value());
  REQUIRE((*background)->SetCpuPriority(CpuPriority::kBackground).has_value());
  // Its weight stays the default and, with no foreground call running, its quota its own.
  auto& cap = cgroup::BackgroundCpuCap::Instance();
  cap.Settle();
  CHECK(WeightOf(**background) == WeightOf(**normal));
  CHECK(QuotaOf(**background) == 100000);
  auto spin_on_cpu0 = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) return 3;
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  };
  void* shared = ::mmap(nullptr, sizeof(RaiseClocks), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  auto* clocks = new (shared) RaiseClocks();
  struct Unmap {
    void* at;
    ~Unmap() { ::munmap(at, sizeof(RaiseClocks)); }
  } unmap{shared};
  // The background group's busy process notes when it gets a CPU back after a pause.
  auto busy_and_noting = [clocks] {
    PinToCpu0();
    int64_t last = MonotonicNs();
    for (;;) {
      int64_t now = MonotonicNs();
      if (now - last > 200000) {
        uint32_t at = clocks->resumes.fetch_add(1);
        clocks->resumed_ns[at % 4096].store(now);
      }
      clocks->busy_ran_ns.store(now, std::memory_order_relaxed);
      last = now;
    }
    return 0;
  };
  // And a process of it that waits for a call, as a sandbox's agent waits on its stream: the
  // test writes a byte after each raise, as the server writes the call's request.
  int request[2];
  REQUIRE(::pipe2(request, O_CLOEXEC) == 0);
  auto waiting_for_calls = [clocks, &request] {
    PinToCpu0();
    char byte;
    while (::read(request[0], &byte, 1) == 1) clocks->call_woke_ns.store(MonotonicNs());
    return 4;
  };
  GatedChild busy_normal(spin_on_cpu0);
  GatedChild busy_background(busy_and_noting);
  GatedChild call_stand_in(waiting_for_calls);
  ::close(request[0]);
  struct CloseRequest {
    int fd;
    ~CloseRequest() { ::close(fd); }
  } close_request{request[1]};
  REQUIRE((*normal)->Attach(busy_normal.pid()).has_value());
  REQUIRE((*background)->Attach(busy_background.pid()).has_value());
  REQUIRE((*background)->Attach(call_stand_in.pid()).has_value());
  busy_normal.Go();
  busy_background.Go();
  call_stand_in.Go();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // both spinning
  // Nobody waits: background work runs at full speed, an equal share of the CPU.
  auto [alone_normal, alone_back] =
      CpuOverEnough(**normal, **background, std::chrono::milliseconds(500), 0.1);
  INFO("no foreground call, over 500 ms on one CPU: normal " << alone_normal << " s, background "
                                                             << alone_back << " s");
  CHECK(alone_back * 3 > alone_normal);
  CHECK(alone_normal * 3 > alone_back);

  // A foreground call runs (the normal group stands for it): the background group is capped to
  // kBackgroundCpuShare of a CPU, its weight unchanged.
  cgroup::ForegroundCall foreground;
  cap.Settle();
  CHECK(cap.capped());
  CHECK(QuotaOf(**background) == 10000);
  CHECK(QuotaOf(**normal) == 100000);
  auto [fore, back] = CpuOverEnough(**normal, **background, std::chrono::milliseconds(500), 0.1);
  INFO("under a foreground call, over 500 ms on one CPU: normal " << fore << " s, background "
                                                                  << back << " s");
  CHECK(fore > back);
  // The cap is a bound of its own, whatever else runs on the CPU: 10 % of it, 0.05 s of the
  // 0.5 s (up to 19 % measured in the emulated VM, where the quota is checked at each 4 ms tick
  // and a window can last longer than asked); at most twice that.
  CHECK(back < 2 * cgroup::kBackgroundCpuShare * 0.5);

  // Issue #38: the raised group gets its share within 50 ms of every raise, a foreground call
  // running all the while. With the former weight scheme on CFS (Linux < 6.6) it did not: the
  // ticks it ran at weight 1 left it a virtual runtime lead that reweight_entity() keeps, so it
  // waited 0.2-1.4 s (in the emulated VM) for the normal group to catch up (background_cpu.h);
  // in 5 of 8 raises measured there it did not run at all in 0.6 s. Five raises, each after
  // 300 ms capped: each must give the raised group a tenth of the 50 ms after it, and the five
  // together a quarter (its fair share is a half). Each window a quarter was the rule until CI
  // runs in the emulated VM lost one window in about ten runs to the host (a raised group that
  // started 27 ms late, then ran its share): the old scheme fails both rules. A window in
  // which the two together ran under 10 ms says nothing (an emulated VM on a loaded host loses
  // whole windows to the host; a host at load 17 on two cores leaves them 10-15 ms), nor does
  // one that lasted over 62.5 ms or was charged more CPU time than it lasted: each is taken
  // again, up to 20 raises in all.
  // Also measured (the goal: 10 ms at p99), exactly, by the processes themselves: the
  // time from the raise to the first CPU time of the call's stand-in, woken right after the
  // raise, and of the busy process (a raise that finds it running is left out of that). The
  // quota write unthrottles the group at once, but the kernel reschedules the CPU only for a
  // wakeup or at a tick (unthrottle_cfs_rq() preempts nothing but the idle task): the call's
  // process preempts at once, the busy one waits for the next tick or two (4-8 ms at HZ 250).
  int judged = 0, got_share = 0, got_tenth = 0;
  double normal_total = 0, raised_total = 0;
  std::string windows, call_firsts, busy_firsts;
  constexpr auto kWindow = std::chrono::milliseconds(50);
  for (int attempt = 0; attempt < 20 && judged < 5; ++attempt) {
    if (attempt > 0) {
      REQUIRE((*background)->SetCpuPriority(CpuPriority::kBackground).has_value());
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it runs a little, capped
    }
    double normal0 = (*normal)->Usage().cpu_seconds;
    double raised0 = (*background)->Usage().cpu_seconds;
    uint32_t resumes0 = clocks->resumes.load();
    int64_t raised_ns = MonotonicNs();
    bool busy_running = raised_ns - clocks->busy_ran_ns.load() < 200000;
    auto raised_at = std::chrono::steady_clock::now();
    REQUIRE((*background)->SetCpuPriority(CpuPriority::kNormal).has_value());
    REQUIRE(::write(close_request.fd, "c", 1) == 1);  // the call's request
    std::this_thread::sleep_until(raised_at + kWindow);
    double normal_ran = (*normal)->Usage().cpu_seconds - normal0;
    double raised_ran = (*background)->Usage().cpu_seconds - raised0;
    auto lasted = std::chrono::steady_clock::now() - raised_at;
    windows += fmt::format(" {:.3f}/{:.3f}", normal_ran, raised_ran);
    // A window this thread overslept by over a quarter measures the stretch, not the raise: the
    // emulated VM's host took the vCPUs (0.104 s of "normal" in a 50 ms window once; in a CI run,
    // a 72 ms window whose raised group started 27 ms late). Windows that ran to time last
    // 51-60 ms there.
    if (lasted > kWindow * 5 / 4) {
      windows += "(late)";
      continue;
    }
    // Nor does one whose two groups, on one CPU, were charged more CPU time than it lasted, past
    // the two ticks' charging its ends may be off by (at HZ 250): the emulated guest's clock
    // jumped (a 6.1 VM run at host load 5-9 charged the normal group 0.084 s in a window of at
    // most 62.5 ms, the raised group 0.008 s). A raised group left without the CPU shows as
    // normal + raised close to the window, never over it.
    if (normal_ran + raised_ran > std::chrono::duration<double>(lasted).count() + 0.010) {
      windows += "(overcharged)";
      continue;
    }
    if (normal_ran + raised_ran < 0.01) continue;
    ++judged;
    normal_total += normal_ran;
    raised_total += raised_ran;
    if (raised_ran * 3 > normal_ran) ++got_share;
    if (raised_ran * 9 > normal_ran) ++got_tenth;
    int64_t woke = clocks->call_woke_ns.load();
    call_firsts += woke > raised_ns
                       ? fmt::format(" {:.2f}", static_cast<double>(woke - raised_ns) / 1e6)
                       : " -1";
    if (busy_running) continue;
    int64_t first_resume = -1;
    for (uint32_t i = resumes0, end = clocks->resumes.load(); i != end; ++i) {
      int64_t at = clocks->resumed_ns[i % 4096].load();
      if (at > raised_ns && (first_resume < 0 || at < first_resume)) first_resume = at;
    }
    busy_firsts += first_resume > 0
                       ? fmt::format(" {:.2f}", static_cast<double>(first_resume - raised_ns) / 1e6)
                       : " -1";
  }
  INFO("the 50 ms after each raise, normal/raised s:" << windows);
  INFO("first CPU time after each raise, ms (-1: none in 50 ms): the call's"
       << call_firsts << "; the busy one's" << busy_firsts);
  INFO("over the judged windows: normal " << normal_total << " s, raised " << raised_total << " s");
  CHECK(judged == 5);
  CHECK(got_tenth == judged);
  CHECK(raised_total * 3 > normal_total);
  CHECK(QuotaOf(**background) == 100000);  // its own quota again
  auto [first, raised] = CpuOverEnough(**normal, **background, std::chrono::milliseconds(500), 0.1);
  INFO("raised: normal " << first << " s, formerly background " << raised << " s");
  std::cerr << fmt::format(
      "[{}] cpu (cap under foreground calls): uncapped: normal {:.3f} s, background {:.3f} s; "
      "lowered: normal {:.3f} s, background {:.3f} s of 0.5 s; the 50 ms after "
      "each raise, normal/raised s:{} ({} of {} with a quarter); first CPU time after each raise, "
      "ms: the call's{}; the busy process's{}; the 0.5 s after: {:.3f} s, {:.3f} s\n",
      manager.mode(), alone_normal, alone_back, fore, back, windows, got_share, judged, call_firsts,
      busy_firsts, first, raised);
  CHECK(raised * 3 > first);
  CHECK(first * 3 > raised);
  REQUIRE((*normal)->Destroy().has_value());
  REQUIRE((*background)->Destroy().has_value());
}

void CheckMemoryLimitKills(CgroupManager& manager) {
  Limits limits = SmallLimits();  // 32 MiB
  auto group = manager.Create("sess_oom000000001", limits);
  REQUIRE(group.has_value());
  GatedChild child([] {
    // 256 MiB, touched page by page: far past the limit.
    for (int i = 0; i < 64; ++i) {
      auto* block = static_cast<char*>(std::malloc(4 << 20));
      if (block == nullptr) return 3;
      std::memset(block, 1, 4 << 20);
    }
    return 0;
  });
  REQUIRE((*group)->Attach(child.pid()).has_value());
  child.Go();
  int status = child.Wait();
  INFO("child wait status " << status);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  SandboxUsage usage = (*group)->Usage();
  CHECK(usage.oom_kills >= 1);
  CHECK(usage.memory_peak_bytes <= limits.memory_bytes + (1 << 20));
  std::cerr << fmt::format("[{}] OOM: child SIGKILLed, oom_kills={}, peak={} bytes (limit {})\n",
                           manager.mode(), usage.oom_kills, usage.memory_peak_bytes,
                           limits.memory_bytes);
  REQUIRE((*group)->Destroy().has_value());
}

void CheckPidsLimit(CgroupManager& manager) {
  Limits limits = SmallLimits();  // 8 pids
  auto group = manager.Create("sess_pids00000001", limits);
  REQUIRE(group.has_value());
  // Returns how many forks worked before one failed with EAGAIN (99: none failed, 98: other).
  GatedChild child([] {
    for (int i = 0; i < 32; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        for (;;) ::pause();
      }
      if (pid < 0) return errno == EAGAIN ? i : 98;
    }
    return 99;
  });
  REQUIRE((*group)->Attach(child.pid()).has_value());
  child.Go();
  int status = child.Wait();
  REQUIRE(WIFEXITED(status));
  // The child itself is one of the 8 tasks.
  CHECK(WEXITSTATUS(status) == static_cast<int>(limits.pids) - 1);
  CHECK((*group)->Usage().pids == limits.pids - 1);  // the grandchildren are still there
  std::cerr << fmt::format("[{}] pids.max {}: fork failed with EAGAIN after {} forks\n",
                           manager.mode(), limits.pids, WEXITSTATUS(status));
  REQUIRE((*group)->Destroy().has_value());  // kills the paused grandchildren
}

void CheckKillAllAndDestroy(CgroupManager& manager) {
  auto group = manager.Create("sess_kill00000001", SmallLimits());
  REQUIRE(group.has_value());
  GatedChild child([]() -> int {
    for (int i = 0; i < 3; ++i) {
      if (::fork() == 0) {
        for (;;) ::pause();
      }
    }
    for (;;) ::pause();
  });
  REQUIRE((*group)->Attach(child.pid()).has_value());
  child.Go();
  REQUIRE(WaitFor([&] { return (*group)->Usage().pids == 4; }, std::chrono::seconds(5)));
  std::string procs = ProcsFile(**group);
  REQUIRE((*group)->KillAll().has_value());
  int status = child.Wait();
  CHECK(WIFSIGNALED(status));
  CHECK(WaitFor([&] { return cgroup::ReadPids(procs).value().empty(); }, std::chrono::seconds(2)));
  std::vector<std::string> paths = (*group)->paths();
  auto started = std::chrono::steady_clock::now();
  REQUIRE((*group)->Destroy().has_value());
  auto took = std::chrono::steady_clock::now() - started;
  for (const auto& path : paths) CHECK_FALSE(cgroup::PathExists(path));
  CHECK((*group)->Destroy().has_value());  // idempotent
  std::cerr << fmt::format("[{}] KillAll emptied 4 processes; Destroy after it took {} us\n",
                           manager.mode(),
                           std::chrono::duration_cast<std::chrono::microseconds>(took).count());
}

void CheckSweepOrphans(CgroupManager& manager) {
  auto live = manager.Create("sess_live00000001", SmallLimits());
  REQUIRE(live.has_value());
  // What a crashed server leaves: a session group (in every hierarchy) with a process in it.
  const std::string orphan = "sess_orphan000001";
  GatedChild child([]() -> int {
    for (;;) ::pause();
  });
  std::vector<std::string> orphan_dirs;
  for (const auto& parent : manager.parent_dirs()) {
    std::string dir = parent + "/" + orphan;
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    orphan_dirs.push_back(dir);
    REQUIRE(cgroup::WriteControl(dir + "/cgroup.procs", std::to_string(child.pid())).has_value());
  }
  child.Go();
  auto swept =
      manager.SweepOrphans([](const std::string& name) { return name == "sess_live00000001"; });
  REQUIRE(swept.has_value());
  CHECK(*swept == 1);
  for (const auto& dir : orphan_dirs) CHECK_FALSE(cgroup::PathExists(dir));
  int status = child.Wait();
  CHECK(WIFSIGNALED(status));
  for (const auto& path : (*live)->paths()) CHECK(cgroup::PathExists(path));
  REQUIRE((*live)->Destroy().has_value());
}

double MeasureCreateDestroy(CgroupManager& manager, int rounds) {
  using Clock = std::chrono::steady_clock;
  Clock::duration create{};
  Clock::duration destroy{};
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    auto group = manager.Create(fmt::format("sess_time{:08d}", i), SmallLimits());
    auto t1 = Clock::now();
    REQUIRE(group.has_value());
    REQUIRE((*group)->Destroy().has_value());
    auto t2 = Clock::now();
    create += t1 - t0;
    destroy += t2 - t1;
  }
  auto us = [&](Clock::duration d) {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()) /
           rounds;
  };
  std::cerr << fmt::format("[{}] Create {:.0f} us, Destroy {:.0f} us (mean of {})\n",
                           manager.mode(), us(create), us(destroy), rounds);
  return us(create) + us(destroy);
}

}  // namespace sandbox::testing
