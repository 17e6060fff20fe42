#include "runtime/cgroup/background_cpu.h"

#include <errno.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/cgroup/cgroup_fs.h"

namespace sandbox::cgroup {
long CappedQuotaMicros(size_t members, long own_quota_micros, long period_micros) {
  double part = kBackgroundCpuShare * static_cast<double>(period_micros) /
                static_cast<double>(std::max<size_t>(members, 1));
  long quota = std::max(1000L, std::lround(part));  // the kernel refuses quotas under 1 ms
  return own_quota_micros < 0 ? quota : std::min(own_quota_micros, quota);
}

std::optional<std::string> BoostedWeight(std::string_view own_weight, bool v2, int boost) {
  auto weight = ParseControlNumber<long>(own_weight);
  if (!weight || *weight <= 0) return std::nullopt;
  long most = v2 ? 10000 : 262144;  // the kernel's largest cpu.weight, cpu.shares
  return std::to_string(std::min(most, *weight * std::max(boost, 1)));
}

namespace {
// The group's weight file: cpu.weight on v2, cpu.shares on v1.
std::string WeightFile(const std::string& dir, bool v2) {
  return dir + (v2 ? "/cpu.weight" : "/cpu.shares");
}
}  // namespace

std::optional<std::pair<long, long>> ParseCpuMax(std::string_view cpu_max) {
  while (!cpu_max.empty() && (cpu_max.back() == '\n' || cpu_max.back() == ' ')) {
    cpu_max.remove_suffix(1);
  }
  size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view quota = cpu_max.substr(0, space);
  auto period = ParseControlNumber<long>(cpu_max.substr(space + 1));
  if (!period || *period <= 0) return std::nullopt;
  std::optional<long> quota_micros =
      quota == "max" ? std::optional<long>(-1) : ParseControlNumber<long>(quota);
  if (!quota_micros) return std::nullopt;
  return std::pair{*quota_micros, *period};
}

// ---- BackgroundCpuGroup ----

Result<std::unique_ptr<BackgroundCpuGroup>> BackgroundCpuGroup::Join(std::string dir, bool v2,
                                                                     BackgroundCpuCap& cap) {
  long quota = -1, period = 0;
  if (v2) {
    SBX_ASSIGN_OR_RETURN(std::string text, ReadControl(dir + "/cpu.max"));
    auto parsed = ParseCpuMax(text);
    if (!parsed) return Fail(ErrorCode::kInternal, "{}/cpu.max: unexpected '{}'", dir, text);
    std::tie(quota, period) = *parsed;
  } else {
    SBX_ASSIGN_OR_RETURN(std::string quota_text, ReadControl(dir + "/cpu.cfs_quota_us"));
    SBX_ASSIGN_OR_RETURN(std::string period_text, ReadControl(dir + "/cpu.cfs_period_us"));
    auto parsed_quota = ParseControlNumber<long>(quota_text);
    auto parsed_period = ParseControlNumber<long>(period_text);
    if (!parsed_quota || !parsed_period || *parsed_period <= 0) {
      return Fail(ErrorCode::kInternal, "{}: unexpected cpu.cfs_quota_us '{}' or period '{}'", dir,
                  quota_text, period_text);
    }
    quota = *parsed_quota < 0 ? -1 : *parsed_quota;
    period = *parsed_period;
  }
  // Its own weight, for the raise's boost. Lowered again before a raise's boost ended: the
  // weight to restore is its own, written back now.
  std::string weight_file = WeightFile(dir, v2);
  std::string weight;
  {
    // Not while the cap's thread writes a weight back: this would read the boosted one as its own.
    std::lock_guard<std::mutex> weights(cap.weight_mutex_);
    if (auto boosted_before = cap.TakeWeightRestore(weight_file)) {
      weight = *boosted_before;
      if (auto restored = WriteControl(weight_file, weight); !restored) {
        spdlog::debug("background cpu: {}: {}", weight_file, restored.error().message);
      }
    } else if (auto read = ReadControl(weight_file)) {
      weight = *read;  // none (a test's directory, a container's cpu dir not visible): no boost
    }
  }
  std::unique_ptr<BackgroundCpuGroup> group(
      new BackgroundCpuGroup(std::move(dir), v2, quota, period, std::move(weight), cap));
  cap.Add(group.get());
  return group;
}

BackgroundCpuGroup::BackgroundCpuGroup(std::string dir, bool v2, long own_quota, long period,
                                       std::string own_weight, BackgroundCpuCap& cap)
    : dir_(std::move(dir)),
      v2_(v2),
      own_quota_micros_(own_quota),
      period_micros_(period),
      own_weight_(std::move(own_weight)),
      cap_(cap) {}

BackgroundCpuGroup::~BackgroundCpuGroup() {
  cap_.Remove(this);
  // The cap thread may be writing this group's quota (not another's: each has its own lock).
  std::lock_guard<std::mutex> write(write_mutex_);
  if (!has_) return;  // never capped: nothing to give back
  // Heavier first, while still throttled: the kernel weighs the group anew as the quota write
  // puts it back on the run queue, so it is placed heavy (background_cpu.h says why).
  std::string weight_file = WeightFile(dir_, v2_);
  const int factor = cap_.raise_boost_.load();
  auto boosted = factor > 1 ? BoostedWeight(own_weight_, v2_, factor) : std::nullopt;
  bool boost = boosted && WriteControl(weight_file, *boosted).has_value();
  if (auto restored = WriteQuota(own_quota_micros_); !restored) {
    spdlog::debug("background cpu: giving {} its quota back: {}", dir_, restored.error().message);
  }
  if (boost) cap_.RestoreWeightLater(weight_file, own_weight_);
}

Status BackgroundCpuGroup::Apply(std::optional<size_t> members) {
  if (has_ == members) return {};
  SBX_TRY(WriteQuota(members ? CappedQuotaMicros(*members, own_quota_micros_, period_micros_)
                             : own_quota_micros_));
  has_ = members;
  return {};
}

Status BackgroundCpuGroup::WriteQuota(long quota_micros) {
  if (v2_) {
    std::string quota = quota_micros < 0 ? "max" : std::to_string(quota_micros);
    return WriteControl(dir_ + "/cpu.max", fmt::format("{} {}", quota, period_micros_));
  }
  return WriteControl(dir_ + "/cpu.cfs_quota_us",
                      std::to_string(quota_micros < 0 ? -1 : quota_micros));
}

// ---- BackgroundCpuCap ----

BackgroundCpuCap& BackgroundCpuCap::Instance() {
  // Never destroyed: sandboxes may still leave it while static destructors run.
  static auto* cap = new BackgroundCpuCap();
  return *cap;
}

BackgroundCpuCap::BackgroundCpuCap(std::chrono::milliseconds lift_delay,
                                   std::chrono::milliseconds raise_boost_time)
    : lift_delay_(lift_delay), raise_boost_time_(raise_boost_time) {}

BackgroundCpuCap::~BackgroundCpuCap() {
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    stop_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::unique_lock<std::mutex> lock(state_mutex_);
  RestoreWeights(lock, /*all=*/true);  // no raised group stays heavy
}

void BackgroundCpuCap::ForegroundBegins() {
  if (foreground_.fetch_add(1) != 0) return;  // the cap is on already (or on its way)
  std::lock_guard<std::mutex> lock(state_mutex_);
  if (thread_.joinable()) Wake();
}

void BackgroundCpuCap::ForegroundEnds() {
  if (foreground_.fetch_sub(1) != 1) return;
  std::lock_guard<std::mutex> lock(state_mutex_);
  if (thread_.joinable()) Wake();
}

bool BackgroundCpuCap::capped() const {
  std::lock_guard<std::mutex> lock(state_mutex_);
  return capped_;
}

std::chrono::steady_clock::duration BackgroundCpuCap::CappedTime() const {
  std::lock_guard<std::mutex> lock(state_mutex_);
  auto total = capped_total_;
  if (capped_) total += std::chrono::steady_clock::now() - capped_since_;
  return total;
}

void BackgroundCpuCap::Settle() {
  std::unique_lock<std::mutex> lock(state_mutex_);
  uint64_t asked = asked_;
  settled_.wait(lock, [&] { return applied_ >= asked || !thread_.joinable(); });
}

void BackgroundCpuCap::Add(BackgroundCpuGroup* group) {
  {
    std::lock_guard<std::mutex> lock(members_mutex_);
    members_.insert(group);
  }
  std::lock_guard<std::mutex> lock(state_mutex_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  Wake();
}

void BackgroundCpuCap::Remove(BackgroundCpuGroup* group) {
  {
    std::lock_guard<std::mutex> lock(members_mutex_);
    if (members_.erase(group) == 0) return;
  }
  std::lock_guard<std::mutex> lock(state_mutex_);
  if (capped_) Wake();  // the others' parts of the cap grow
}

void BackgroundCpuCap::RestoreWeightLater(std::string file, std::string weight) {
  std::lock_guard<std::mutex> lock(state_mutex_);
  restores_.push_back(
      {std::move(file), std::move(weight), std::chrono::steady_clock::now() + raise_boost_time_});
  // The thread runs while there are members (a raised group was one); woken to wait for `at`.
  if (thread_.joinable()) {
    changed_.notify_all();
  }
}

std::optional<std::string> BackgroundCpuCap::TakeWeightRestore(const std::string& file) {
  std::lock_guard<std::mutex> lock(state_mutex_);
  auto found = std::find_if(restores_.begin(), restores_.end(),
                            [&](const WeightRestore& restore) { return restore.file == file; });
  if (found == restores_.end()) return std::nullopt;
  std::string weight = std::move(found->weight);
  restores_.erase(found);
  return weight;
}

void BackgroundCpuCap::RestoreWeights(std::unique_lock<std::mutex>& lock, bool all) {
  if (restores_.empty()) return;
  // weight_mutex_ over the taking and the writes (taken before state_mutex_, as Join does).
  lock.unlock();
  std::lock_guard<std::mutex> weights(weight_mutex_);
  lock.lock();
  auto now = std::chrono::steady_clock::now();
  std::vector<WeightRestore> due;
  for (auto it = restores_.begin(); it != restores_.end();) {
    if (all || it->at <= now) {
      due.push_back(std::move(*it));
      it = restores_.erase(it);
    } else {
      ++it;
    }
  }
  if (due.empty()) return;
  lock.unlock();
  for (const WeightRestore& restore : due) {
    // A group destroyed meanwhile (ENOENT) has nothing to restore.
    if (auto written = WriteControl(restore.file, restore.weight); !written) {
      spdlog::log(written.error().sys_errno == ENOENT ? spdlog::level::debug : spdlog::level::warn,
                  "background cpu: restoring {}: {}", restore.file, written.error().message);
    }
  }
  lock.lock();
}

void BackgroundCpuCap::Wake() {
  ++asked_;
  changed_.notify_all();
}

void BackgroundCpuCap::Run() {
  std::unique_lock<std::mutex> lock(state_mutex_);
  for (;;) {
    RestoreWeights(lock, /*all=*/false);
    auto asked_for = [&] { return stop_ || applied_ != asked_; };
    if (restores_.empty()) {
      changed_.wait(lock, [&] { return asked_for() || !restores_.empty(); });
    } else {
      auto next = restores_.front().at;
      for (const WeightRestore& restore : restores_) next = std::min(next, restore.at);
      // Woken by a new restore too (not asked_for): then the loop waits for the nearer one.
      changed_.wait_until(lock, next);
    }
    if (stop_) return;
    if (applied_ == asked_) continue;  // a weight to restore, not a change
    uint64_t asked = asked_;
    bool cap = foreground_.load() > 0;
    if (!cap && capped_) {
      // The last call ended: lift the cap unless another begins within lift_delay_.
      cap = changed_.wait_for(lock, lift_delay_, [&] { return stop_ || foreground_.load() > 0; });
      if (stop_) return;
      asked = asked_;
    }
    auto now = std::chrono::steady_clock::now();
    if (cap && !capped_) capped_since_ = now;
    if (!cap && capped_) capped_total_ += now - capped_since_;
    capped_ = cap;
    lock.unlock();
    Apply(cap);
    lock.lock();
    applied_ = asked;
    settled_.notify_all();
  }
}

void BackgroundCpuCap::Apply(bool cap) {
  // The members as they are now, then one write each under that group's own lock: a raise (a
  // member leaving) never waits for the writes of the others, nor for a slow one (lifting 50
  // groups took 3-4 ms; a Docker container's cgroup file can be slower). A group that left
  // meanwhile is skipped; one that joined is in the next sweep, which its Add asked for.
  std::vector<BackgroundCpuGroup*> groups;
  {
    std::lock_guard<std::mutex> lock(members_mutex_);
    groups.assign(members_.begin(), members_.end());
  }
  std::optional<size_t> wanted = cap ? std::optional<size_t>(groups.size()) : std::nullopt;
  for (BackgroundCpuGroup* group : groups) {
    std::unique_lock<std::mutex> write;
    {
      std::lock_guard<std::mutex> lock(members_mutex_);
      if (members_.count(group) == 0) continue;  // raised meanwhile: its quota is its own
      // Taken before the set's lock is let go: the group cannot be destroyed until it is free.
      write = std::unique_lock<std::mutex>(group->write_mutex_);
    }
    if (auto written = group->Apply(wanted); !written) {
      // Not fatal: an uncapped group only competes at its normal weight. A group whose
      // directory is gone (a sandbox killed from outside, not yet reaped) is expected.
      spdlog::log(written.error().sys_errno == ENOENT ? spdlog::level::debug : spdlog::level::warn,
                  "background cpu: {}", written.error().message);
    }
  }
}

}  // namespace sandbox::cgroup
