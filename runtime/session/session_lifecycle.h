// SessionLifecycle: a session's life from its start to its end. It creates sessions (a sandbox
// from the warm pool, or a cold start within the server's cap and the owner's quota) and lists
// them in the registry; it finds a session for a call and holds it busy for it (BusyLease,
// session_lease.h), resuming a saved one through the hibernator; it closes and retires them;
// its reaper thread expires idle sessions (hibernating them when hibernation is on), follows a
// drain, and tears down those closed in the background; CloseAll is the orderly stop.
//
// It knows no backend (SandboxStarter starts the sandboxes) and keeps no saved state
// (SessionHibernator does). Thread-safe. Its locks: reaper_mutex_ (stopping_, teardown_), never
// held across a sandbox or agent call; the registry's own; the activity figures are atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/session/cold_preload_queue.h"
#include "runtime/session/live_session.h"
#include "runtime/session/sandbox_pool.h"
#include "runtime/session/sandbox_starter.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_config.h"
#include "runtime/session/session_lease.h"
#include "runtime/session/session_registry.h"

namespace sandbox {

class SessionHibernator;

class SessionLifecycle {
 public:
  // `config`, `backend`, `starter` and `registry` must outlive it.
  SessionLifecycle(const SessionConfig& config, Backend& backend, const SandboxStarter& starter,
                   SessionRegistry& registry);
  // Stops the reaper and the pool (Stop). The sessions are its owner's to close first (CloseAll).
  ~SessionLifecycle();

  // Starts the reaper thread and the warm pool (config.pool_size). `hibernator`: null when
  // hibernation is off; else it saves idle sessions and resumes saved ones from then on, and
  // must outlive this. Called once: the hibernator takes leases here, so it is made after.
  void Start(SessionHibernator* hibernator);
  // Stops the reaper (what it had left to tear down is dropped: the sandboxes' destructors
  // remove them) and the pool (its sandboxes go first). Idempotent.
  void Stop();

  // A new session of the acting subject, listed. kServerDraining while draining.
  Result<std::shared_ptr<LiveSession>> Create(const SessionOptions& options);
  // Starts the sandbox of a session (fixed_id "": a new id) owned by `owner` (held to that
  // subject's quota), not yet listed: a new one (Create) or one being resumed.
  Result<std::shared_ptr<LiveSession>> StartSession(const SessionOptions& options,
                                                    const std::string& fixed_id,
                                                    const std::string& owner);

  // The session `id` names for the acting subject (session_registry.h's rules): a live one, or a
  // saved one resumed into a new sandbox.
  Result<std::shared_ptr<LiveSession>> Lookup(const std::string& id);
  // The session's busy lease, for a call: one that finds it busy being saved for hibernation
  // waits for that, then finds it hibernated (and resumes it) or live again; busy with anything
  // else, session_busy. `for_hibernation`: the lease a save is made under (such waiters wait).
  Result<BusyLease> Acquire(const std::string& id, bool for_hibernation = false);
  // A lease ends (BusyLease's destructor): the session's last use stamped, its preload told,
  // and a session whose agent can serve nothing more retired; then its busy flag is given back.
  void EndCall(const std::shared_ptr<LiveSession>& session);
  // How many leases are held now.
  int calls_in_flight() const { return calls_in_flight_; }

  // How Close removes the sandbox. kWait: reaped and removed before Close returns
  // (sandbox_close_session). kBackground: closed at once, killed, reaped and removed by the
  // reaper thread a moment later, so a caller answering its client does not wait for that
  // (sandbox_run_once, whose run is over by then); shutdown still waits for it.
  enum class Teardown { kWait, kBackground };
  // force: close even while a run is in flight (the run is killed). Else session_busy. A
  // hibernated session's saved state is deleted, without a resume. One being saved for
  // hibernation is waited for, as Acquire does, then closed as it ends: saved (the save deleted)
  // or live.
  Status Close(const std::string& id, bool force, Teardown teardown);
  // Closes a session whose agent can serve nothing more (`why`), as Close does.
  void Retire(const std::shared_ptr<LiveSession>& session, const std::string& why);
  // The orderly stop: with hibernation, every session not in a call is saved (all together,
  // within a budget); then every session is closed.
  void CloseAll();

  // Hibernates sessions idle longer than hibernate_after, and closes those idle longer than the
  // TTL (while draining, both after the drain's); returns how many were closed. The reaper calls
  // it periodically.
  int ExpireIdle();
  // From now on Create fails with kServerDraining, and sessions idle longer than `idle_ttl` are
  // hibernated (closed when hibernation is off or the save fails), looked for every second.
  void StartDrain(std::chrono::milliseconds idle_ttl);
  bool draining() const { return draining_; }

  // The warm pool's figures; nullopt without a pool.
  std::optional<PoolStats> PoolStatus();
  // The configured clock's time (SessionConfig::clock).
  std::chrono::system_clock::time_point Now() const;

 private:
  friend class BusyLease;  // counts itself in calls_in_flight_
  SavedSessions* saved() const;
  std::chrono::milliseconds ReaperInterval() const;
  void ReaperLoop();
  // A session started cold, of the pool's kind: its zygote starts at a quiet moment.
  void QueueColdPreload(const std::shared_ptr<LiveSession>& session);
  // Stamps the end of a call or a creation; IdleFor is how long ago the last one ended (zero
  // while one runs): the pool refills only after a quiet stretch.
  void MarkActivity();
  std::chrono::steady_clock::duration IdleFor();

  const SessionConfig& config_;
  Backend& backend_;
  const SandboxStarter& starter_;
  SessionRegistry& registry_;
  SessionHibernator* hibernator_ = nullptr;  // set by Start; null: hibernation off

  std::atomic<int> calls_in_flight_{0};       // busy leases held (the pool refills when none is)
  std::atomic<int64_t> last_activity_ns_{0};  // steady clock, when the last call or creation ended
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> drain_idle_ms_{0};

  // Expires idle sessions, and tears down those closed with Teardown::kBackground.
  std::mutex reaper_mutex_;
  std::condition_variable reaper_wake_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<LiveSession>> teardown_;  // guarded by reaper_mutex_
  std::thread reaper_;

  // Starts cold sessions' zygotes in quiet moments (cold_preload_queue.h). Its turns hold the
  // sessions weakly; destroyed (its thread joined) before what IdleFor reads.
  ColdPreloadQueue cold_preloads_{[this] { return IdleFor(); }};

  // Declared last: destroyed (its refill thread stopped) before what it calls into.
  std::unique_ptr<SandboxPool> pool_;
};

}  // namespace sandbox
