#include "runtime/session/deadline_timer.h"

#include <utility>

namespace sandbox {

DeadlineTimer::~DeadlineTimer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeadlineTimer::At(Clock::time_point when, std::function<void()> action) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    due_.emplace(when, std::move(action));
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  wake_.notify_all();
}

void DeadlineTimer::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (due_.empty()) {
      wake_.wait(lock);
      continue;
    }
    auto first = due_.begin();
    if (Clock::now() < first->first) {
      wake_.wait_until(lock, first->first);
      continue;  // woken early (a sooner action, a stop) or on time: look again
    }
    std::function<void()> action = std::move(first->second);
    due_.erase(first);
    lock.unlock();
    action();
    lock.lock();
  }
}

}  // namespace sandbox
