#include "runtime/session/sandbox_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/metrics/sandbox_metrics.h"

namespace sandbox {

namespace {

// How often the idle pooled sandboxes are checked (a dead one is also caught at claim).
constexpr std::chrono::seconds kCheckInterval{10};
// After a failed start, the wait before the next grows from this to kMaxBackoff.
constexpr std::chrono::seconds kMinBackoff{1};
constexpr std::chrono::seconds kMaxBackoff{60};
// The refill thread's nice value: starting a pooled sandbox must not slow running calls.
constexpr int kRefillNice = 10;
// After a claim, the claiming client's first call usually follows at once: a start waits this
// long for it to begin (and then for it to end).
constexpr std::chrono::milliseconds kClaimSettle{100};
// How long the server must have been quiet before a start: longer than the gap between one
// client's response and its next request in a burst, short enough that an idle server refills
// at once.
constexpr std::chrono::milliseconds kQuietStretch{250};
// A start never waits longer than this for a quiet stretch (a server always busy still refills,
// at most one sandbox per this interval).
constexpr std::chrono::milliseconds kMaxQuietWait{10000};
constexpr std::chrono::milliseconds kQuietPoll{5};

bool SameLimits(const Limits& a, const Limits& b) {
  return a.memory_bytes == b.memory_bytes && a.cpus == b.cpus && a.pids == b.pids &&
         a.disk_bytes == b.disk_bytes && a.tmp_bytes == b.tmp_bytes &&
         a.open_files == b.open_files && a.file_size_bytes == b.file_size_bytes;
}

// Whether a pooled sandbox's agent still answers (a cheap stat of its root).
bool Alive(WarmSandbox& warm) { return static_cast<bool>(warm.agent->Stat("/")); }

}  // namespace

bool PoolKey::operator==(const PoolKey& other) const {
  return image == other.image && SameLimits(limits, other.limits) && egress == other.egress;
}

SandboxPool::SandboxPool(PoolKey key, int size, Starter start, IdleFor idle_for)
    : key_(std::move(key)), size_(size), start_(std::move(start)), idle_for_(std::move(idle_for)) {
  if (size_ > 0) refill_ = std::thread([this] { RefillLoop(); });
}

SandboxPool::~SandboxPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  cancel_.Cancel();  // a start in progress ends now, not after its warm-up
  if (refill_.joinable()) refill_.join();
  std::deque<WarmSandbox> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready.swap(ready_);
  }
  for (auto& warm : ready) (void)warm.sandbox->Kill();
  ready.clear();  // each Sandbox's destructor reaps and removes what it made
}

std::optional<WarmSandbox> SandboxPool::Claim() {
  for (;;) {
    std::optional<WarmSandbox> warm;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ready_.empty()) break;
      warm = std::move(ready_.front());
      ready_.pop_front();
    }
    wake_.notify_all();
    if (Alive(*warm)) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++claimed_;
      last_claim_ = std::chrono::steady_clock::now();
      metrics::PoolClaimed();
      return warm;
    }
    spdlog::warn("pooled sandbox {} died while idle; replacing it", warm->session_id);
    (void)warm->sandbox->Kill();
    std::lock_guard<std::mutex> lock(mutex_);
    ++replaced_;
  }
  wake_.notify_all();
  metrics::PoolMissed();
  return std::nullopt;
}

PoolStats SandboxPool::Stats() {
  PoolStats stats;
  std::vector<Sandbox*> sandboxes;
  std::lock_guard<std::mutex> lock(mutex_);
  stats.size = size_;
  stats.ready = static_cast<int>(ready_.size());
  stats.starting = starting_;
  stats.claimed = claimed_;
  stats.replaced = replaced_;
  stats.failed = failed_;
  stats.last_error = last_error_;
  // Under the lock, so a claim cannot take (and a session close destroy) one being read.
  for (auto& warm : ready_) stats.memory_bytes += warm.sandbox->Usage().memory_bytes;
  return stats;
}

void SandboxPool::CheckIdle() {
  std::deque<WarmSandbox> checking;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    checking.swap(ready_);
  }
  std::deque<WarmSandbox> alive;
  int dead = 0;
  for (auto& warm : checking) {
    if (Alive(warm)) {
      alive.push_back(std::move(warm));
    } else {
      spdlog::warn("pooled sandbox {} died while idle; replacing it", warm.session_id);
      (void)warm.sandbox->Kill();
      ++dead;
    }
  }
  checking.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  replaced_ += static_cast<uint64_t>(dead);
  // Claims made meanwhile found fewer; those checked go back in front (the oldest first).
  for (auto it = alive.rbegin(); it != alive.rend(); ++it) ready_.push_front(std::move(*it));
}

void SandboxPool::WaitQuiet(std::unique_lock<std::mutex>& lock) {
  const auto give_up = std::chrono::steady_clock::now() + kMaxQuietWait;
  while (!stopping_ && std::chrono::steady_clock::now() < give_up) {
    bool settled = std::chrono::steady_clock::now() >= last_claim_ + kClaimSettle;
    if (settled) {
      lock.unlock();
      bool quiet = idle_for_() >= kQuietStretch;
      lock.lock();
      if (quiet) return;
    }
    wake_.wait_for(lock, kQuietPoll);
  }
}

void SandboxPool::RefillLoop() {
  // Linux nice values are per thread; the sandboxes themselves are cloned on the backend's own
  // threads (or by dockerd), so only the host-side work of a refill runs at this priority.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kRefillNice) != 0) {
    spdlog::debug("pool: could not lower the refill thread's priority");
  }
  auto backoff = std::chrono::seconds(0);
  auto retry_at = std::chrono::steady_clock::now();  // no start before this (after a failure)
  auto next_check = std::chrono::steady_clock::now() + kCheckInterval;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      lock.unlock();
      CheckIdle();
      lock.lock();
      next_check = std::chrono::steady_clock::now() + kCheckInterval;
      continue;
    }
    bool need = static_cast<int>(ready_.size()) + starting_ < size_;
    if (!need || now < retry_at) {
      wake_.wait_until(lock, need ? std::min(retry_at, next_check) : next_check);
      continue;
    }
    WaitQuiet(lock);
    if (stopping_) break;
    ++starting_;
    lock.unlock();
    auto started = start_(cancel_);
    lock.lock();
    --starting_;
    if (stopping_) {
      // Killed by the stop (its failure is no failure), or finished just before it.
      lock.unlock();
      if (started) (void)started->sandbox->Kill();
      started = Fail(ErrorCode::kInternal, "stopping");  // destroys it outside the lock
      lock.lock();
      break;
    }
    if (!started) {
      ++failed_;
      last_error_ = started.error().message;
      spdlog::warn("pool: could not start a sandbox: {}", last_error_);
      backoff = std::clamp(backoff * 2, kMinBackoff, kMaxBackoff);
      retry_at = std::chrono::steady_clock::now() + backoff;
      continue;
    }
    backoff = std::chrono::seconds(0);
    last_error_.clear();
    started->ready_since = std::chrono::steady_clock::now();
    ready_.push_back(std::move(*started));
  }
}

}  // namespace sandbox
