// SessionManager: the sessions of one server. Creates sandboxes through a Backend, keeps one
// AgentClient per session, enforces one run at a time (session_busy), the session cap, idle TTL
// and per-session limit overrides bounded by the configured maxima. Crash-safe records under
// state_dir/sessions let a restarted server (or `mcp-sandbox sessions gc`) sweep leftovers.
// Thread-safe: calls on different sessions run concurrently.
//
// A facade over its parts, each with its own header and tests: SessionRegistry (the live
// sessions, the caps, the lookup rules), SandboxStarter (a sandbox's start), EffectiveLimits
// (session_limits.h), SandboxPool, SavedSessions and the hibernation exchanges
// (session_hibernation.h). Its own code is split by concern: session_manager.cc (the calls,
// status), session_manager_lifecycle.cc (create, pool, expiry, drain, close) and
// session_manager_hibernation.cc (save, resume, fork).
//
// Locks, never two at once except where said: the registry's (its map, creation counts and
// hibernating ids; never held across a sandbox or agent call), reaper_mutex_ (stopping_,
// teardown_), resume_mutex_ (one resume at a time; the registry's lock is taken inside it), a
// session's busy flag (an atomic, one agent exchange at a time) and a CancelToken's own.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/agent/host/agent_client.h"
#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/cold_preload_queue.h"
#include "runtime/session/live_session.h"
#include "runtime/session/sandbox_pool.h"
#include "runtime/session/sandbox_starter.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_config.h"
#include "runtime/session/session_egress.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_owner.h"

namespace sandbox {

struct SessionInfo {
  std::string id;  // runtime/session/session_id.h
  std::string name;
  std::string state;  // "idle" | "busy" | "hibernated"
  std::string image;
  std::string backend;  // "namespace" | "docker"
  std::string replica;  // SessionConfig::replica_id ("" on a single host)
  std::chrono::system_clock::time_point created;
  std::chrono::system_clock::time_point last_used;
  uint64_t runs = 0;
  Limits limits;            // requested
  EnforcedLimits enforced;  // in force
  SandboxUsage usage;
  // Bytes on its /mnt/data and /tmp after its last run (the agent's statfs of the tmpfs);
  // nullopt before the first run since it started or resumed.
  std::optional<uint64_t> data_bytes;
  std::optional<uint64_t> tmp_bytes;
  EgressInfo egress;         // the egress policy in force and what it carried
  uint64_t saved_bytes = 0;  // hibernated: the size of its saved files and state
};

// Cancels a run from another thread (MCP notifications/cancelled).
class CancelToken {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class SessionManager;
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  std::function<void()> on_cancel_;
};

class SessionRegistry;

class SessionManager {
 public:
  SessionManager(SessionConfig config, std::shared_ptr<Backend> backend, ImageResolver resolver);
  ~SessionManager();  // closes every session

  Result<SessionInfo> Create(const SessionOptions& options);
  Result<SessionInfo> Get(const std::string& id);
  std::vector<SessionInfo> List();
  // How Close removes the sandbox. kWait: reaped and removed before Close returns
  // (sandbox_close_session). kBackground: closed at once, killed, reaped and removed by the
  // reaper thread a moment later, so a caller answering its client does not wait for that
  // (sandbox_run_once, whose run is over by then); shutdown still waits for it.
  enum class Teardown { kWait, kBackground };
  // force: close even while a run is in flight (the run is killed). Else session_busy.
  Status Close(const std::string& id, bool force = false, Teardown teardown = Teardown::kWait);
  void CloseAll();

  // The bounds every run is held to (code size; timeout_s at most the configured exec timeout),
  // for callers that want to refuse a request before they start a sandbox for it. Run checks
  // them too, with the same messages.
  Status CheckRunRequest(const RunRequest& request) const;

  // Runs Python or a shell command. session_busy while another run is in flight; timeout_s is
  // bounded by the configured exec timeout; `cancel` may be null.
  Result<RunResult> Run(const std::string& id, RunRequest request,
                        const OutputCallback& on_output = {}, CancelToken* cancel = nullptr);

  // kUploadTooLarge above the configured upload limit, judged before anything is sent.
  Status WriteFile(const std::string& id, const std::string& path, std::string_view content,
                   bool overwrite);
  // The same for content produced piece by piece (see ContentSource), `size` bytes in all.
  Status WriteFile(const std::string& id, const std::string& path, uint64_t size,
                   const ContentSource& content, bool overwrite);
  Result<std::string> ReadFile(const std::string& id, const std::string& path, uint64_t max_bytes);
  Result<FileInfo> Stat(const std::string& id, const std::string& path);
  Result<std::vector<FileInfo>> ListFiles(const std::string& id, const std::string& path,
                                          bool recursive);

  // Hibernates sessions idle longer than hibernate_after, and closes those idle longer than the
  // TTL (while draining, both after the drain's); returns how many were closed. Called
  // periodically.
  int ExpireIdle();

  // Drain (a replica about to stop): from now on Create fails with kServerDraining, and
  // sessions idle longer than `idle_ttl` are hibernated (closed when hibernation is off or the
  // save fails; checked every second), so the next server on the state dir resumes them. Open
  // sessions go on.
  void StartDrain(std::chrono::milliseconds idle_ttl);
  bool draining() const { return draining_; }
  // Sessions open now (not counting the warm pool's sandboxes).
  size_t SessionCount();
  // Saved sessions that are not live now (0 without hibernation); every subject's.
  size_t HibernatedCount();

  // Hibernation (runtime/session/saved_sessions.h; off when config().hibernate_after is 0).
  // Saves the session's files and interpreter state and stops its sandbox; the next call naming
  // it resumes it. Already hibernated: nothing to do.
  Status Hibernate(const std::string& id);
  // A new session with a copy of `id`'s files and interpreter state, hibernated until its first
  // call; `id` is untouched.
  Result<SessionInfo> Fork(const std::string& id);
  // The saved sessions (null when hibernation is off).
  SavedSessions* saved() { return saved_.get(); }
  // `owner`'s quota: the settings', with its token's quota claim applied (quota_claim.h).
  SubjectQuota QuotaOf(const std::string& owner) const;

  // The warm pool's figures; nullopt without a pool.
  std::optional<PoolStats> PoolStatus();

  const SessionConfig& config() const { return config_; }
  Backend& backend() { return *backend_; }

 private:
  using Session = LiveSession;
  class BusyLease;
  Result<std::shared_ptr<Session>> Lookup(const std::string& id);
  // The session's busy lease, for a call: one that finds it busy being saved for hibernation
  // waits for that, then finds it hibernated (and resumes it) or live again; busy with anything
  // else, session_busy. `for_hibernation`: the lease Hibernate saves under (such waiters wait).
  Result<BusyLease> Acquire(const std::string& id, bool for_hibernation = false);
  // Starts the sandbox of a new session (fixed_id "": a new id) owned by `owner` (held to
  // that subject's quota), not yet listed.
  Result<std::shared_ptr<Session>> StartSession(const SessionOptions& options,
                                                const std::string& fixed_id,
                                                const std::string& owner);
  // Hibernation (runtime/session/session_hibernation.h): resumes a saved session into a new
  // sandbox and lists it; saves a live one (under `as_id`: itself, or its fork).
  Result<std::shared_ptr<Session>> Resume(const std::string& id);
  Status SaveSession(Session& session, const std::string& as_id,
                     std::chrono::system_clock::time_point created);
  SessionInfo DescribeSaved(const SavedSessionMeta& meta) const;
  std::chrono::milliseconds ReaperInterval() const;
  // Closes a session whose agent can serve nothing more (`why`), as Close does.
  void Retire(const std::shared_ptr<Session>& session, const std::string& why);
  SessionInfo Describe(const Session& session) const;
  // A session started cold, of the pool's kind: its zygote starts at a quiet moment.
  void QueueColdPreload(const std::shared_ptr<Session>& session);
  // Stamps the end of a call or a creation; IdleFor is how long ago the last one ended (zero
  // while one runs): the pool refills only after a quiet stretch.
  void MarkActivity();
  std::chrono::steady_clock::duration IdleFor();
  std::chrono::system_clock::time_point Now() const;
  void ReaperLoop();

  SessionConfig config_;
  std::shared_ptr<Backend> backend_;
  SandboxStarter starter_;                    // reads config_ and backend_, declared before it
  std::atomic<int> calls_in_flight_{0};       // busy leases held (the pool refills when none is)
  std::atomic<int64_t> last_activity_ns_{0};  // steady clock, when the last call or creation ended
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> drain_idle_ms_{0};

  // Expires idle sessions, and tears down those closed with Teardown::kBackground.
  std::mutex reaper_mutex_;
  std::condition_variable reaper_wake_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<Session>> teardown_;  // guarded by reaper_mutex_
  std::thread reaper_;

  std::unique_ptr<SavedSessions> saved_;  // null: hibernation off
  std::mutex resume_mutex_;               // one resume at a time (two calls, one sandbox)
  // The live sessions, those being created and hibernated, and the lookup rules
  // (session_registry.h; its own lock). Made after saved_, which it reads; destroyed before it.
  std::unique_ptr<SessionRegistry> registry_;

  // Starts cold sessions' zygotes in quiet moments (cold_preload_queue.h). Its turns hold the
  // sessions weakly; destroyed (its thread joined) before what IdleFor reads.
  ColdPreloadQueue cold_preloads_{[this] { return IdleFor(); }};

  // Declared last: destroyed (its refill thread stopped) before what it calls into.
  std::unique_ptr<SandboxPool> pool_;
};

}  // namespace sandbox
