// How a sandbox waits at background CPU priority (CpuPriority::kBackground: a warm pool's refill,
// a cold session's zygote importing its preload) without ever costing a call a user waits for
// (issue #38).
//
// Background work keeps its normal weight (cpu.weight 100, cpu.shares 1024) at all times. A
// lowered weight yields well, but on CFS (Linux before 6.6) it leaves a debt: each tick a group
// runs at weight 1 advances its virtual runtime a hundred times faster, and reweight_entity()
// keeps that lead when the weight is raised again, so the raised group is not picked until every
// busy group has caught up (0.2-1.4 s in Debian 12's 6.1; docs/benchmarks.md). cpu.idle and
// SCHED_IDLE are weights too, with the same debt.
//
// Instead, background groups are capped by CPU bandwidth (cpu.max on v2, cpu.cfs_quota_us on v1)
// while at least one foreground call runs, and uncapped when the last one ends: with nobody
// waiting, a refill runs at full speed. A raise lifts the group's cap, which unthrottles it at once
// (tg_set_cfs_bandwidth). The cap, kBackgroundCpuShare of one CPU, is shared among the background
// groups (each gets its part, at least the kernel's 1 ms per period), so one refill alone still
// makes progress and fifty cold preloads together do not take the host.
//
// A raise from under the cap also makes the group kRaiseBoost times heavier (cpu.weight,
// cpu.shares) for kRaiseBoostTime. On EEVDF (6.6 on) a group is throttled while it runs, when its
// quota runs out mid-slice, so its entity leaves the run queue with a negative lag (it had more
// than its share). Until 6.18, which throttles per task at the return to user space, the
// throttle dequeues the group's entity keeping that lag (6.12: without the delayed dequeue that
// would run it off), and the unthrottle puts it back (place_entity). The group is then not
// eligible: its woken call can neither preempt nor be picked until the others have run that lag
// back, up to max(2 slices, a tick). In Debian 13's 6.12 that left the raised call about a tick
// behind a group never lowered (p50 9.3-13.7 against 6.3-7.3 ms; lags of -1.3 to -4.0 ms, the
// clamp, read from sched/debug right after raises; a group lowered by cgroup.freeze instead,
// whose tasks leave by sleeping, came back as fast as the baseline: docs/benchmarks.md). The lag
// is service owed and survives a weight change, but a heavier group earns it back sooner (its
// share of the others' running time is larger) and then preempts: boosted, the raised call's
// p50 was 5.6-6.0 ms, 1.00-1.14 times the baseline's. CFS (before 6.6) has no lag and 6.18 shows
// no such delay; the boost cost neither. It is written before the quota, while the group is still
// throttled, so the unthrottle places the group heavy; for those 20 ms the group has ten times its
// share of its CPU against the others there, and only after a raise from under the cap, which
// is the first call of a session someone waits for.
//
// BackgroundCpuCap counts the foreground calls (runtime/session begins and ends them) and applies
// the cap from one thread of its own, so a call pays one atomic increment and, when it is the
// first, one notify: no cgroup write runs on a request's path. The cap is lifted kLiftDelay after
// the last call ends, so back-to-back calls do not rewrite every group between them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::cgroup {

// The CPU all background groups together may use while a foreground call runs.
inline constexpr double kBackgroundCpuShare = 0.1;
// How much heavier a group raised from under the cap is, and for how long (see above): long
// enough for a lag of a tick (10 ms at HZ 100) to be run back.
inline constexpr int kRaiseBoost = 10;
inline constexpr std::chrono::milliseconds kRaiseBoostTime{20};

// Pure: the quota (microseconds per `period_micros`) of one of `members` background groups
// under the cap, its own quota being `own_quota_micros` (negative: none): its part of
// kBackgroundCpuShare, at least 1 ms (the kernel refuses less), at most its own quota.
long CappedQuotaMicros(size_t members, long own_quota_micros, long period_micros);
// Pure: the weight text `own_weight` (v2 cpu.weight, at most 10000; v1 cpu.shares, at most
// 262144) times `boost`; nullopt when it is not a weight.
std::optional<std::string> BoostedWeight(std::string_view own_weight, bool v2, int boost);
// Pure: v2's cpu.max text ("max 100000", "50000 100000") as {quota (-1: max), period};
// nullopt when it is not cpu.max text.
std::optional<std::pair<long, long>> ParseCpuMax(std::string_view cpu_max);

class BackgroundCpuCap;

// One group waiting at background priority: a member of the cap from its construction to its
// destruction (the raise), which gives the group its own quota back if it was capped, heavier
// for kRaiseBoostTime.
class BackgroundCpuGroup {
 public:
  // `dir` holds the group's cpu.max (`v2`) or cpu.cfs_quota_us and cpu.cfs_period_us (v1).
  // Reads the group's own quota (fails naming the file) and weight (none: no boost at its raise),
  // then joins `cap`, which caps it at once if a foreground call runs.
  static Result<std::unique_ptr<BackgroundCpuGroup>> Join(std::string dir, bool v2,
                                                          BackgroundCpuCap& cap);
  ~BackgroundCpuGroup();
  BackgroundCpuGroup(const BackgroundCpuGroup&) = delete;
  BackgroundCpuGroup& operator=(const BackgroundCpuGroup&) = delete;

  // Writes the group's quota: capped as one of `members` (nullopt: its own quota again),
  // unless it has that already. Called by the cap's thread only, holding write_mutex_.
  Status Apply(std::optional<size_t> members);

 private:
  friend class BackgroundCpuCap;
  BackgroundCpuGroup(std::string dir, bool v2, long own_quota, long period, std::string own_weight,
                     BackgroundCpuCap& cap);
  Status WriteQuota(long quota_micros);

  const std::string dir_;
  const bool v2_;
  const long own_quota_micros_;  // -1: none
  const long period_micros_;
  const std::string own_weight_;  // its cpu.weight or cpu.shares text, "" where none was read
  BackgroundCpuCap& cap_;
  // Held while the group's quota is written: the raise (the destructor) waits for the cap
  // thread's write of this group only, never for its sweep of the others.
  std::mutex write_mutex_;
  std::optional<size_t> has_;  // what its quota is now: capped as one of N, or nullopt: its own
};

// The process's count of foreground calls and the cap it puts on the background groups.
class BackgroundCpuCap {
 public:
  static constexpr std::chrono::milliseconds kLiftDelay{10};

  // The process's one instance (its thread starts at the first member).
  static BackgroundCpuCap& Instance();
  explicit BackgroundCpuCap(std::chrono::milliseconds lift_delay = kLiftDelay,
                            std::chrono::milliseconds raise_boost_time = kRaiseBoostTime);
  ~BackgroundCpuCap();
  BackgroundCpuCap(const BackgroundCpuCap&) = delete;
  BackgroundCpuCap& operator=(const BackgroundCpuCap&) = delete;

  // A call someone waits for begins / ends (thread-safe, cheap: no cgroup write here).
  void ForegroundBegins();
  void ForegroundEnds();

  // Whether the background groups are capped now, and for how long they have been in all
  // (a warm-up's time limit leaves this time out: runtime/session/sandbox_starter.cc).
  bool capped() const;
  std::chrono::steady_clock::duration CappedTime() const;
  // Blocks until the cap thread has applied everything asked of it so far (tests).
  void Settle();
  // How much heavier a raised group is (1: not at all; benches compare).
  void set_raise_boost(int boost) { raise_boost_.store(boost); }

 private:
  friend class BackgroundCpuGroup;
  void Add(BackgroundCpuGroup* group);
  void Remove(BackgroundCpuGroup* group);
  void Run();
  void Wake();  // under state_mutex_
  void Apply(bool cap);
  // A raised group's weight file and the weight to write back at `at` (the cap's thread does).
  struct WeightRestore {
    std::string file;
    std::string weight;
    std::chrono::steady_clock::time_point at;
  };
  void RestoreWeightLater(std::string file, std::string weight);  // not under state_mutex_
  // The weight a raise of `file` left to restore, taken (a group lowered again before then).
  std::optional<std::string> TakeWeightRestore(const std::string& file);
  void RestoreWeights(std::unique_lock<std::mutex>& lock, bool all);  // those due, or all

  const std::chrono::milliseconds lift_delay_;
  const std::chrono::milliseconds raise_boost_time_;
  std::atomic<int> foreground_{0};
  std::atomic<int> raise_boost_{kRaiseBoost};

  mutable std::mutex state_mutex_;  // guards what follows down to the thread
  std::condition_variable changed_;
  std::condition_variable settled_;
  uint64_t asked_ = 0;    // changes asked for
  uint64_t applied_ = 0;  // changes the thread has applied
  bool stop_ = false;
  bool capped_ = false;
  std::chrono::steady_clock::time_point capped_since_;
  std::chrono::steady_clock::duration capped_total_{};
  std::vector<WeightRestore> restores_;
  std::thread thread_;
  // Held while weights are written back, and by a Join reading a group's own weight; taken
  // before state_mutex_.
  std::mutex weight_mutex_;

  // Guards the set; taken before a member's write_mutex_, never while holding one.
  std::mutex members_mutex_;
  std::set<BackgroundCpuGroup*> members_;
};

// For the duration of a call someone waits for (runtime/session).
class ForegroundCall {
 public:
  ForegroundCall() { BackgroundCpuCap::Instance().ForegroundBegins(); }
  ~ForegroundCall() { BackgroundCpuCap::Instance().ForegroundEnds(); }
  ForegroundCall(const ForegroundCall&) = delete;
  ForegroundCall& operator=(const ForegroundCall&) = delete;
};

}  // namespace sandbox::cgroup
