// SessionManager: the sessions of one server. Creates sandboxes through a Backend, keeps one
// AgentClient per session, enforces one run at a time (session_busy), the session cap, idle TTL
// and per-session limit overrides bounded by the configured maxima. Crash-safe records under
// state_dir/sessions let a restarted server (or `mcp-sandbox sessions gc`) sweep leftovers.
// Thread-safe: calls on different sessions run concurrently.
//
// A thin facade over its parts, each with its own header and tests: SessionRegistry (the live
// sessions, the caps, the lookup rules), SessionLifecycle (create, pool, lookup and the busy
// lease, expiry, drain, close), SessionHibernator (save, resume, fork, the saved-session
// budget), SandboxStarter (a sandbox's start), EffectiveLimits (session_limits.h) and
// SavedSessions. Its own code: the calls (run, files) under a lease, status and listing.
//
// Locks, never two at once except where said: the registry's (its map, creation counts and
// hibernating ids; never held across a sandbox or agent call), the lifecycle's reaper lock, the
// hibernator's resume lock (one resume at a time; the registry's lock is taken inside it), a
// session's busy flag (an atomic, one agent exchange at a time) and a CancelToken's own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/agent/host/agent_client.h"
#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/live_session.h"
#include "runtime/session/sandbox_pool.h"
#include "runtime/session/sandbox_starter.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_config.h"
#include "runtime/session/session_egress.h"
#include "runtime/session/session_hibernator.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_lifecycle.h"
#include "runtime/session/session_owner.h"
#include "runtime/session/session_registry.h"

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

class SessionManager {
 public:
  SessionManager(SessionConfig config, std::shared_ptr<Backend> backend, ImageResolver resolver);
  ~SessionManager();  // closes every session

  Result<SessionInfo> Create(const SessionOptions& options);
  Result<SessionInfo> Get(const std::string& id);
  std::vector<SessionInfo> List();
  // How Close removes the sandbox (SessionLifecycle::Teardown).
  using Teardown = SessionLifecycle::Teardown;
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
  bool draining() const { return lifecycle_->draining(); }
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
  SessionInfo Describe(const LiveSession& session) const;
  SessionInfo DescribeSaved(const SavedSessionMeta& meta) const;

  SessionConfig config_;
  std::shared_ptr<Backend> backend_;
  SandboxStarter starter_;                // reads config_ and backend_, declared before it
  std::unique_ptr<SavedSessions> saved_;  // null: hibernation off
  // Each made after what it reads, destroyed before it; the lifecycle's reaper and pool, which
  // call into the hibernator, are stopped first (~SessionManager).
  std::unique_ptr<SessionRegistry> registry_;
  std::unique_ptr<SessionLifecycle> lifecycle_;
  std::unique_ptr<SessionHibernator> hibernator_;
};

}  // namespace sandbox
