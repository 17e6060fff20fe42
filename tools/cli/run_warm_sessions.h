// The batch's warm pool: sessions of the batch's default limits started ahead of need by their
// own threads, so a snippet finds its sandbox up (agent ready) while the one before it still
// runs. Each warm session serves exactly one snippet and is closed after it, as a cold one is:
// warm means started early, never reused. (The session manager's own pool waits for a quiet
// stretch between calls before it refills, as a server should; a batch is never quiet.)
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/session/session_manager.h"

namespace sandbox::cli {

class WarmSessions {
 public:
  // Keeps up to `size` sessions started, with `size` starter threads (0: none, Take always
  // answers nullopt).
  WarmSessions(SessionManager& manager, int size);
  ~WarmSessions();  // stops the starters and closes the sessions nobody took

  // A started session's id, waiting for one being started; nullopt when none can be had (the
  // last start failed, or the pool has stopped): the caller starts its own.
  std::optional<std::string> Take();
  // No more starts: the input is over (or the batch stopped). Take still hands out those ready.
  void Stop();

 private:
  void StarterLoop();

  SessionManager& manager_;
  const size_t size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> ready_;
  size_t starting_ = 0;
  bool stopping_ = false;
  bool failing_ = false;  // the last start failed: takers start their own (and see the error)
  std::vector<std::thread> starters_;
};

}  // namespace sandbox::cli
