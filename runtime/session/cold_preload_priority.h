// The CPU priority of a session started cold while its zygote imports the preload (issue #28).
//
// Until the zygote is due (the server starts it in a quiet moment: cold_preload_queue.h) nothing
// imports, so the session stays at normal priority and its calls cost no priority writes: on cgroup
// v1 a raise and a lower are two cpu.shares writes and two reweighs of the sessions' parent (about
// 0.1 ms a call), which a burst of new sessions would otherwise pay on every call. From the
// moment the zygote is due until the preload is in place the session is at background priority
// except during its own calls (init stops the zygote during them), so its imports yield to
// every other session's calls. After that, normal for good.
//
// Thread-safe: calls begin and end on request threads, the due moment comes on the queue's.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "runtime/backend.h"
#include "runtime/base/result.h"

namespace sandbox {

class ColdPreloadPriority {
 public:
  // `set` changes the session's CPU priority (its sandbox's SetCpuPriority).
  using Setter = std::function<Status(CpuPriority)>;
  ColdPreloadPriority(std::string session_id, Setter set);

  // The zygote begins importing now: background, unless a call of the session runs (its end
  // lowers it then).
  void ZygoteDue();
  // A call of the session begins: normal priority for its duration.
  void CallBegins();
  // A call ended; `preload_pending` is the agent's word after it. A preload in place ends this
  // for good (normal priority from now on); otherwise back to background once the zygote is due.
  void CallEnds(bool preload_pending);

  // Whether the session waits at background priority now (for tests and status).
  bool lowered() const;
  // Whether the preload is in place, so nothing more is done.
  bool done() const;

 private:
  bool Set(CpuPriority priority);  // under mutex_; logs a failure

  const std::string session_id_;
  const Setter set_;
  mutable std::mutex mutex_;
  bool due_ = false;      // the zygote may be importing
  bool in_call_ = false;  // a call of the session runs
  bool lowered_ = false;  // at background priority
  bool done_ = false;     // the preload is in place
};

}  // namespace sandbox
