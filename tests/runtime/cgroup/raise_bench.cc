// raise_bench: what a raise from background CPU priority costs the call a user waits for (issue
// #38), against a baseline taken in the same run on the same kernel. tools/bench.d/
// background_cpu.sh runs it on this host and in ../shared/tools/run-in-vm per kernel.
//
//   raise_bench [--rounds N] [--lowered-ms MS] [--cap QUOTA_US/PERIOD_US] [--raise-boost N]
//               [--freeze]
//
// --cap (cgroup v2 only, an experiment): the raised group is lowered by writing that cpu.max
// itself, and raised by writing its own quota back, instead of the product's cap (whose cap of
// one group alone is 10000/100000): what another period would change.
// --raise-boost: how much heavier the product makes a group at its raise, for a moment (default
// its kRaiseBoost; 1: not at all, as before): background_cpu.h says why.
// --freeze (cgroup v2, an experiment): the raised group is lowered by cgroup.freeze instead of a
// cap, and raised by thawing it: a group its tasks left by sleeping, not by a throttle.
//
// On CPU 0: a normal group's spinner (it stands for the foreground call that runs meanwhile, and
// a ForegroundCall is held throughout, so a lowered group is capped as in the server), and three
// more groups, each with a process that waits on a pipe for a call (a sandbox's agent waiting on
// its stream), the first two also with a busy process (a zygote importing):
//
// - "raised": lowered (SetCpuPriority(kBackground)) for --lowered-ms, then raised and its call
//   written, the server's order (ColdPreloadPriority::CallBegins, then the request);
// - "never lowered": at normal priority throughout; its call written at the same point of its
//   round, with nothing before it (the server raises nothing for a session never lowered);
// - "idle": never lowered either, nothing else in it (a warm session waiting for its next call).
//
// Rounds of the three take turns (each first as often as the others), so all see the same load.
// Each sample is the time from the start of the raise (the baseline: of the write) to the moment
// the waiting process runs, which it notes itself (CLOCK_MONOTONIC, memory shared across the fork):
// its first CPU time. Emulated VMs are slow in absolute terms: compare the two within one kernel,
// never times across kernels.
//
// Prints a markdown table and one JSON line with the samples (ms).
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/support/bench_stats.h"

namespace {

using namespace sandbox;
using sandbox::testing::GatedChild;
using sandbox::testing::Percentile;
using sandbox::testing::QuotaOf;

int64_t MonotonicNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;
}

constexpr int kRaised = 0, kNeverLowered = 1, kIdle = 2, kKinds = 3;

// When each group's waiting process last woke, written by that process.
struct WakeClocks {
  std::atomic<int64_t> woke_ns[kKinds];
};

// The group's v2 control file `name` (cpu.max, cpu.weight, cgroup.freeze), "" where it has none.
std::string ControlFile(const SandboxCgroup& group, const std::string& name) {
  for (const auto& dir : group.paths()) {
    if (cgroup::ReadControl(dir + "/" + name)) return dir + "/" + name;
  }
  return "";
}
std::string CpuMaxFile(const SandboxCgroup& group) { return ControlFile(group, "cpu.max"); }

// One group of those measured: its waiting process and (but the idle one) its busy one, on CPU 0.
struct Measured {
  std::unique_ptr<SandboxCgroup> group;
  int request_fd = -1;               // the write end of the waiting process's pipe
  std::unique_ptr<GatedChild> busy;  // none in the idle group
  std::unique_ptr<GatedChild> waiting;
  std::vector<double> first_cpu_ms;
};

std::string Spread(const std::vector<double>& ms) {
  return fmt::format("{:.2f} | {:.2f} | {:.2f} | {:.2f}", Percentile(ms, 0.5), Percentile(ms, 0.9),
                     Percentile(ms, 0.99), Percentile(ms, 1.0));
}

std::string JsonList(const std::vector<double>& ms) {
  std::string out = "[";
  for (size_t i = 0; i < ms.size(); ++i) out += fmt::format("{}{:.3f}", i ? "," : "", ms[i]);
  return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 40;
  int lowered_ms = 300;
  std::string cap_by_hand;  // "QUOTA PERIOD" for cpu.max, or "": the product's cap
  int raise_boost = cgroup::kRaiseBoost;
  bool freeze = false;  // lowered by cgroup.freeze instead
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--rounds") {
      rounds = std::atoi(next().c_str());
    } else if (arg == "--lowered-ms") {
      lowered_ms = std::atoi(next().c_str());
    } else if (arg == "--cap") {
      cap_by_hand = next();
      std::replace(cap_by_hand.begin(), cap_by_hand.end(), '/', ' ');
    } else if (arg == "--raise-boost") {
      raise_boost = std::atoi(next().c_str());
    } else if (arg == "--freeze") {
      freeze = true;
    } else {
      std::fprintf(stderr,
                   "usage: raise_bench [--rounds N] [--lowered-ms MS] [--cap QUOTA_US/PERIOD_US] "
                   "[--raise-boost N] [--freeze]\n");
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);
  if (rounds < 1 || lowered_ms < 1 || raise_boost < 1) {
    std::fprintf(stderr,
                 "raise_bench: --rounds, --lowered-ms and --raise-boost must be positive\n");
    return 2;
  }

  auto manager = CgroupManager::Detect(testing::UniqueOwner());
  struct RemoveParents {
    CgroupManager& manager;
    ~RemoveParents() { testing::RemoveParents(manager); }
  } remove_parents{*manager};
  bool cpu = false;
  EnforcedLimits plan = manager->Plan(Limits{});
  for (const auto& limit : plan.limits) {
    cpu |= limit.name == "cpu" && limit.mechanism != LimitMechanism::kNone;
  }
  if (!cpu) {
    std::printf("n/a: no cpu controller for session groups (%s)\n", plan.reason.c_str());
    return 0;
  }
  if ((!cap_by_hand.empty() || freeze) && manager->mode() != "cgroup2") {
    std::fprintf(stderr, "raise_bench: --cap and --freeze need cgroup v2 (this is %s)\n",
                 manager->mode().c_str());
    return 2;
  }
  Limits limits = testing::SmallLimits();
  limits.pids = 64;
  limits.cpus = 1.0;  // a whole CPU each: only the priorities decide who gets the one they share

  void* shared = ::mmap(nullptr, sizeof(WakeClocks), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  auto* clocks = new (shared) WakeClocks();

  auto spin = [] {
    if (!PinTo(0)) return 3;
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  };
  auto normal = manager->Create("sess_raisenormal01", limits);
  if (!normal) {
    std::fprintf(stderr, "raise_bench: %s\n", normal.error().message.c_str());
    return 1;
  }
  GatedChild normal_spinner(spin);
  if (!(*normal)->Attach(normal_spinner.pid())) return 1;

  Measured measured[kKinds];
  const char* names[kKinds] = {"sess_raiseraised01", "sess_raisesteady01", "sess_raiseidle0001"};
  for (int which = 0; which < kKinds; ++which) {
    Measured& m = measured[which];
    auto group = manager->Create(names[which], limits);
    if (!group) {
      std::fprintf(stderr, "raise_bench: %s\n", group.error().message.c_str());
      return 1;
    }
    m.group = std::move(*group);
    int request[2];
    if (::pipe2(request, O_CLOEXEC) != 0) return 1;
    if (which != kIdle) m.busy = std::make_unique<GatedChild>(spin);
    m.waiting = std::make_unique<GatedChild>([clocks, which, read_fd = request[0]] {
      if (!PinTo(0)) return 3;
      char byte;
      while (::read(read_fd, &byte, 1) == 1) clocks->woke_ns[which].store(MonotonicNs());
      return 4;
    });
    ::close(request[0]);
    m.request_fd = request[1];
    if ((m.busy && !m.group->Attach(m.busy->pid())) || !m.group->Attach(m.waiting->pid())) {
      return 1;
    }
  }
  // This thread off CPU 0 where there is another: the writes it times do not wait for CPU 0.
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 1) PinTo(1);

  normal_spinner.Go();
  for (Measured& m : measured) {
    if (m.busy) m.busy->Go();
    m.waiting->Go();
  }
  cgroup::ForegroundCall foreground;  // the normal group's spinner stands for it
  auto& cap = cgroup::BackgroundCpuCap::Instance();
  cap.set_raise_boost(raise_boost);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // all spinning

  int capped_before_raise = 0, late = 0;
  std::vector<double> raise_call_ms;  // the raise itself: SetCpuPriority(kNormal), its quota write
  constexpr int64_t kGiveUpNs = 2'000'000'000;
  for (int round = 0; round < kKinds * rounds; ++round) {
    // In turn, each three rounds beginning with the next kind: 0 1 2, 1 2 0, 2 0 1, ...
    const int which = (round + round / kKinds) % kKinds;
    Measured& m = measured[which];
    if (which == kRaised && freeze) {
      if (!cgroup::WriteControl(ControlFile(*m.group, "cgroup.freeze"), "1")) return 1;
    } else if (which == kRaised && !cap_by_hand.empty()) {
      if (!cgroup::WriteControl(CpuMaxFile(*m.group), cap_by_hand)) return 1;
    } else if (which == kRaised) {
      if (!m.group->SetCpuPriority(CpuPriority::kBackground)) return 1;
      cap.Settle();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(lowered_ms));
    if (which == kRaised && !freeze) {
      const long expected = cap_by_hand.empty() ? 10000 : std::atol(cap_by_hand.c_str());
      capped_before_raise += QuotaOf(*m.group) == expected ? 1 : 0;
    }
    const int64_t woke_before = clocks->woke_ns[which].load();
    const int64_t at = MonotonicNs();
    if (which == kRaised && freeze) {
      if (!cgroup::WriteControl(ControlFile(*m.group, "cgroup.freeze"), "0")) return 1;
      raise_call_ms.push_back(static_cast<double>(MonotonicNs() - at) / 1e6);
    } else if (which == kRaised && !cap_by_hand.empty()) {
      if (!cgroup::WriteControl(CpuMaxFile(*m.group), "100000 100000")) return 1;  // its own
      raise_call_ms.push_back(static_cast<double>(MonotonicNs() - at) / 1e6);
    } else if (which == kRaised) {
      if (!m.group->SetCpuPriority(CpuPriority::kNormal)) return 1;
      raise_call_ms.push_back(static_cast<double>(MonotonicNs() - at) / 1e6);
    }
    if (::write(m.request_fd, "c", 1) != 1) return 1;
    int64_t woke = woke_before;
    while ((woke = clocks->woke_ns[which].load()) == woke_before &&
           MonotonicNs() - at < kGiveUpNs) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (woke == woke_before) {
      ++late;  // counted as the whole wait
      woke = at + kGiveUpNs;
    }
    m.first_cpu_ms.push_back(static_cast<double>(woke - at) / 1e6);
    std::fprintf(stderr, "\rround %d/%d", round + 1, kKinds * rounds);
  }
  std::fprintf(stderr, "\n");
  for (Measured& m : measured) ::close(m.request_fd);

  utsname uts{};
  ::uname(&uts);
  const std::vector<double>& raised = measured[kRaised].first_cpu_ms;
  const std::vector<double>& steady = measured[kNeverLowered].first_cpu_ms;
  const std::vector<double>& idle = measured[kIdle].first_cpu_ms;
  std::printf(
      "kernel %s, %s, %ld cpus; CPU 0 shared by a normal group's spinner and, in each measured "
      "group, a process waiting for a call and (but the idle group) a busy one; %d rounds each, "
      "in turn; lowered %d ms before each raise (capped under the held foreground call in %d of "
      "%d rounds)%s%s%s\n\n",
      uts.release, manager->mode().c_str(), cpus, rounds, lowered_ms, capped_before_raise, rounds,
      cap_by_hand.empty() ? "" : (", lowered by hand: cpu.max " + cap_by_hand).c_str(),
      fmt::format(", the product's raise boost x{}", raise_boost).c_str(),
      freeze ? ", lowered by cgroup.freeze" : "");
  std::printf("| the woken call's first CPU time after | p50 ms | p90 ms | p99 ms | max ms |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  std::printf("| the raise (and the write) | %s |\n", Spread(raised).c_str());
  std::printf("| the write, in a group never lowered (the baseline) | %s |\n",
              Spread(steady).c_str());
  std::printf("| the write, in an idle group (nothing busy in it) | %s |\n", Spread(idle).c_str());
  auto ratio = [&](double p) {
    double base = Percentile(steady, p);
    return base > 0 ? Percentile(raised, p) / base : 0.0;
  };
  std::printf("| raised / never lowered | %.2f | %.2f | %.2f | %.2f |\n", ratio(0.5), ratio(0.9),
              ratio(0.99), ratio(1.0));
  std::printf("| (of the first row: the raise itself, its quota write) | %s |\n",
              Spread(raise_call_ms).c_str());
  if (late > 0) std::printf("\n%d calls did not run within 2 s (counted as 2 s)\n", late);
  std::printf(
      "\n{\"kernel\": \"%s\", \"mode\": \"%s\", \"rounds\": %d, \"capped\": %d, \"raised_ms\": %s, "
      "\"never_lowered_ms\": %s, \"idle_ms\": %s, \"raise_call_ms\": %s, \"cap\": \"%s\", "
      "\"raise_boost\": %d}\n",
      uts.release, manager->mode().c_str(), rounds, capped_before_raise, JsonList(raised).c_str(),
      JsonList(steady).c_str(), JsonList(idle).c_str(), JsonList(raise_call_ms).c_str(),
      freeze                ? "freeze"
      : cap_by_hand.empty() ? "product"
                            : cap_by_hand.c_str(),
      raise_boost);
  for (Measured& m : measured) (void)m.group->Destroy();
  (void)(*normal)->Destroy();
  ::munmap(shared, sizeof(WakeClocks));
  return 0;
}
