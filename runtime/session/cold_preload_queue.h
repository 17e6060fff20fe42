// Sessions started cold (beyond the warm pool) get the preload too, but their zygotes' imports
// must never compete with the calls of a burst (issue #28): a pre-forking server stays out of the
// way of live requests. This queue starts them one at a time, each in a quiet moment: no call
// running and no session being made anywhere on the server for a stretch (the same measure the
// pool's refill waits for), and at least `spacing` after the one before, so that even a long
// quiet spell starts them about one import at a time. A server that is never quiet still starts
// one per `max_wait`; its imports then run at the session's background priority.
//
// A turn is the caller's: it lowers the session's priority and sends init its `preload`
// (SessionManager). Turns run on the queue's own thread, started at the first Add.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sandbox {

class ColdPreloadQueue {
 public:
  // How long the server has been quiet (zero while a call runs or a session is being made).
  using IdleFor = std::function<std::chrono::steady_clock::duration()>;
  // Starts one session's preload, and says how that went: kGone (closed meanwhile) takes no
  // spacing; kRetry goes back in front for the next quiet moment (a call of its own holds its
  // agent).
  enum class Outcome { kStarted, kGone, kRetry };
  using Turn = std::function<Outcome()>;

  struct Timing {
    std::chrono::milliseconds quiet_stretch{250};
    std::chrono::milliseconds spacing{1000};
    std::chrono::milliseconds max_wait{30000};
    std::chrono::milliseconds poll{10};
  };

  explicit ColdPreloadQueue(IdleFor idle_for, Timing timing);
  explicit ColdPreloadQueue(IdleFor idle_for) : ColdPreloadQueue(std::move(idle_for), Timing{}) {}
  // Stops the thread; turns not taken yet are dropped (their sessions go with the server).
  ~ColdPreloadQueue();
  ColdPreloadQueue(const ColdPreloadQueue&) = delete;
  ColdPreloadQueue& operator=(const ColdPreloadQueue&) = delete;

  // Queues a session's turn behind those already waiting.
  void Add(Turn turn);
  // Turns waiting (for status and tests).
  size_t waiting() const;

 private:
  void Loop();

  const IdleFor idle_for_;
  const Timing timing_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Turn> turns_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point next_turn_{};  // spacing after the last turn
  std::thread thread_;                                 // started at the first Add
};

}  // namespace sandbox
