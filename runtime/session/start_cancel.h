// StartCancel: how a stop reaches a sandbox start in progress. The starter shows the sandbox here
// from the moment the backend has made it until its start is over (the agent's hello, the
// preload's import); Cancel kills it, so those waits end at once (the agent's stream closes) and
// the start fails, and the sandbox's destructor removes everything of it. Without this, stopping
// the warm pool waited for a pooled sandbox's warm-up: seconds on a fast host, over a minute under
// a small CPU limit or in an emulated VM, past a service manager's stop timeout (issue #38).
//
// Thread-safe: Cancel runs on the stopping thread, Show and the guard's end on the starting one.
#pragma once

#include <mutex>

#include "runtime/backend.h"

namespace sandbox {

class StartCancel {
 public:
  // While it lives, Cancel kills the sandbox shown; it must end before that sandbox is destroyed
  // (declare it after the owner of the sandbox).
  class Shown {
   public:
    explicit Shown(StartCancel* cancel) : cancel_(cancel) {}
    Shown(Shown&& other) noexcept : cancel_(other.cancel_) { other.cancel_ = nullptr; }
    Shown(const Shown&) = delete;
    Shown& operator=(const Shown&) = delete;
    Shown& operator=(Shown&&) = delete;
    ~Shown();

   private:
    StartCancel* cancel_;  // null: nothing shown
  };

  // Shows `sandbox` until the guard ends; when Cancel came already, kills it at once. `cancel`
  // may be null (a start nothing can cancel): then it does nothing.
  [[nodiscard]] static Shown Show(StartCancel* cancel, Sandbox& sandbox);

  // Kills the sandbox shown now, if any, and every one shown later. Idempotent.
  void Cancel();
  // Whether Cancel came: a start that failed after it failed for that reason.
  bool Cancelled();

 private:
  std::mutex mutex_;  // held across a Kill, so the guard's end waits for it
  Sandbox* shown_ = nullptr;
  bool cancelled_ = false;
};

}  // namespace sandbox
