// SandboxPool: sandboxes of one kind (PoolKey) started ahead of need, their agent up and the
// preload imported, so a new session takes one in a few milliseconds instead of starting one.
// A background thread keeps `size` of them, starting one at a time at a lower CPU priority than
// the server's request threads, checks the idle ones now and then, and replaces one that died.
// A start waits until the server has been quiet for a stretch (no call running, no session being
// made, for kQuietStretch; at most kMaxQuietWait), as a pre-forking server spawns between
// requests: besides CPU, starting a sandbox takes kernel locks (cgroup attach, mounts) a running
// call's forks and exits also need, and an instant with no call running comes often in a burst
// (between one client's response and its next request) without the burst being over.
// A stop (the destructor) does not wait for a start in progress: it kills the sandbox being
// started (StartCancel), so the server's orderly stop never waits for a warm-up.
// The pool owns no policy about sessions: SessionManager decides when a request matches the key
// and turns a claimed sandbox into a session.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/agent/host/agent_client.h"
#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/session_egress.h"
#include "runtime/session/start_cancel.h"

namespace sandbox {

// What a pooled sandbox was started with; a session request matches when all of it is equal.
// A field added here (an egress policy, say) takes part in the match.
struct PoolKey {
  std::string image;  // the image name as configured (SANDBOX_IMAGE)
  Limits limits;
  bool egress = false;  // started with the server's egress policy (a channel to its proxy)

  bool operator==(const PoolKey& other) const;
};

// One started sandbox, ready: its agent said hello and has the preload imported.
struct WarmSandbox {
  std::string session_id;  // the id it was started with (cgroup, container, record names)
  std::string image;       // the resolved image name
  std::unique_ptr<Sandbox> sandbox;
  std::unique_ptr<AgentClient> agent;
  std::chrono::steady_clock::time_point ready_since;
  std::unique_ptr<SessionEgress> egress;  // null: no network (destroyed first: joins tunnels)
  // Started cold with the preload: its zygote waits for the server's `preload` message.
  bool preload_on_request = false;
};

struct PoolStats {
  int size = 0;               // the target
  int ready = 0;              // waiting to be claimed
  int starting = 0;           // being started now (0 or 1)
  uint64_t claimed = 0;       // taken by sessions since the server started
  uint64_t replaced = 0;      // found dead while pooled and dropped
  uint64_t failed = 0;        // starts that failed
  uint64_t memory_bytes = 0;  // what the ready ones use (as their backend reports it)
  std::string last_error;     // of the last failed start, "" if none
};

class SandboxPool {
 public:
  // Starts one sandbox of the key, ready and warm, showing it to `cancel` while it starts (the
  // pool's stop cancels it). Called on the refill thread only.
  using Starter = std::function<Result<WarmSandbox>(StartCancel& cancel)>;
  // How long the server has been quiet: no call running and no session being made, for this
  // long (zero while one is). The session manager's count of busy sessions.
  using IdleFor = std::function<std::chrono::steady_clock::duration()>;

  SandboxPool(
      PoolKey key, int size, Starter start,
      IdleFor idle_for = [] { return std::chrono::steady_clock::duration::max(); });
  // Stops the refill thread (killing a sandbox it is starting) and destroys every pooled sandbox.
  ~SandboxPool();

  const PoolKey& key() const { return key_; }

  // A ready sandbox, checked alive, or nullopt (none ready: the caller starts one cold). Wakes
  // the refill thread either way.
  std::optional<WarmSandbox> Claim();

  PoolStats Stats();

 private:
  void RefillLoop();
  // Waits (lock held on entry and exit) until the server has been quiet for kQuietStretch,
  // stopping, or kMaxQuietWait has passed.
  void WaitQuiet(std::unique_lock<std::mutex>& lock);
  // Drops pooled sandboxes whose agent no longer answers.
  void CheckIdle();

  const PoolKey key_;
  const int size_;
  Starter start_;
  IdleFor idle_for_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<WarmSandbox> ready_;
  int starting_ = 0;
  bool stopping_ = false;
  uint64_t claimed_ = 0;
  std::chrono::steady_clock::time_point last_claim_;
  uint64_t replaced_ = 0;
  uint64_t failed_ = 0;
  std::string last_error_;
  StartCancel cancel_;  // the refill's start in progress, killed by the stop
  std::thread refill_;
};

}  // namespace sandbox
