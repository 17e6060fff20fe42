// Runs actions at their deadlines on one thread of its own, for small, prompt work due a moment
// from now that no request will trigger: lowering a cold session's CPU priority when its zygote
// begins importing (cold_preload_priority.h). Actions run one after another, so they must be
// quick; the thread starts with the first action.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace sandbox {

class DeadlineTimer {
 public:
  using Clock = std::chrono::steady_clock;

  DeadlineTimer() = default;
  // Stops the thread; actions not yet due are dropped, one running is waited for.
  ~DeadlineTimer();
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  // Runs `action` on the timer's thread at `when` (at once when that has passed).
  void At(Clock::time_point when, std::function<void()> action);

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::function<void()>> due_;  // guarded by mutex_
  bool stopping_ = false;                                        // guarded by mutex_
  std::thread thread_;
};

}  // namespace sandbox
