#include "runtime/session/cold_preload_queue.h"

#include <optional>
#include <utility>

namespace sandbox {

ColdPreloadQueue::ColdPreloadQueue(IdleFor idle_for, Timing timing)
    : idle_for_(std::move(idle_for)), timing_(timing) {}

ColdPreloadQueue::~ColdPreloadQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ColdPreloadQueue::Add(Turn turn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    turns_.push_back(std::move(turn));
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  wake_.notify_all();
}

size_t ColdPreloadQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return turns_.size();
}

void ColdPreloadQueue::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  // The front turn's wait for a quiet moment.
  std::optional<std::chrono::steady_clock::time_point> waiting_since;
  while (!stopping_) {
    if (turns_.empty()) {
      waiting_since.reset();
      wake_.wait(lock, [this] { return stopping_ || !turns_.empty(); });
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (now < next_turn_) {
      wake_.wait_until(lock, next_turn_);
      continue;
    }
    if (!waiting_since) waiting_since = now;
    // The idle measure takes the session manager's lock: never called under ours.
    lock.unlock();
    bool quiet = idle_for_() >= timing_.quiet_stretch;
    lock.lock();
    if (stopping_) break;
    if (!quiet && now < *waiting_since + timing_.max_wait) {
      wake_.wait_for(lock, timing_.poll);
      continue;
    }
    Turn turn = std::move(turns_.front());
    turns_.pop_front();
    lock.unlock();
    Outcome outcome = turn();
    lock.lock();
    if (outcome == Outcome::kGone) continue;  // nothing started: the next may go at once
    if (outcome == Outcome::kRetry) turns_.push_front(std::move(turn));
    waiting_since.reset();
    next_turn_ = std::chrono::steady_clock::now() + timing_.spacing;
  }
}

}  // namespace sandbox
