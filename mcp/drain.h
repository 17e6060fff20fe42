// How a server stops when a signal comes: at once (the default, and always on a second
// signal), or, with a drain timeout, after draining: no new sessions, the open ones go on until
// they go idle (then hibernated, as an idle session is, when hibernation is on: the next server
// on the state dir resumes them), and the process leaves when none is left or the timeout is
// reached (what is left is stopped as any orderly stop does: saved too). This is
// the order orchestrators expect of a replica (E2B's orchestrator and Kubernetes' preStop
// habits alike): mark not-ready, let the proxy notice, let the work end, exit. Socket-free and
// clock-injected, so each step is a unit test; `serve` drives it.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace sandbox::mcp {

class DrainPlan {
 public:
  using Clock = std::chrono::steady_clock;

  // timeout 0: never drain (the first signal stops).
  explicit DrainPlan(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  enum class Step {
    kDrain,  // start draining (refuse new sessions, shorten the idle and hibernation time-outs)
    kStop,   // stop now: close every session and leave
  };
  // A shutdown signal came at `now`.
  Step OnSignal(Clock::time_point now);

  // While draining: why to stop now, given how many sessions are left, or nullopt to wait on.
  std::optional<std::string> StopReason(size_t sessions_left, Clock::time_point now) const;

  bool draining() const { return draining_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  std::chrono::milliseconds timeout_;
  bool draining_ = false;
  Clock::time_point deadline_{};
};

}  // namespace sandbox::mcp
