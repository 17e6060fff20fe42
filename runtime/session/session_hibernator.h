// SessionHibernator: hibernation of the sessions (docs/sessions.md "Hibernate, resume, fork"). A
// live session is saved and its sandbox stopped; a saved one is resumed into a new sandbox when
// a call names it; a fork is a copy saved under a new id. Every save is held to its owner's
// saved-session budget (saved_budget.h). The exchanges with the agent are session_hibernation.h's,
// the files on disk saved_sessions.h's, the leases and the sandboxes' start the lifecycle's.
//
// Thread-safe. Its lock: resume_mutex_ (one resume at a time: two calls naming a saved session
// resume it into one sandbox); the registry's is taken inside it.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/base/result.h"
#include "runtime/session/live_session.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_config.h"
#include "runtime/session/session_lifecycle.h"
#include "runtime/session/session_registry.h"

namespace sandbox {

class SessionHibernator {
 public:
  // `saved`: null when hibernation is off (then Hibernate and Fork say so). All must outlive it.
  SessionHibernator(const SessionConfig& config, SessionRegistry& registry,
                    SessionLifecycle& lifecycle, SavedSessions* saved);

  // Saves the session's files and interpreter state and stops its sandbox; the next call naming
  // it resumes it. Already hibernated: nothing to do. A save that fails leaves the session as
  // it was, and is not retried by the reaper until the session is used again.
  Status Hibernate(const std::string& id);
  // Saves a copy of `id`'s files and interpreter state (live or saved) under a new id, which it
  // returns: hibernated until its first call. `id` is untouched.
  Result<std::string> Fork(const std::string& id);
  // Starts a sandbox for the saved session `id`, restores its state there and lists it. A
  // concurrent resume of it is waited for, and its session returned.
  Result<std::shared_ptr<LiveSession>> Resume(const std::string& id);

  // The saved sessions (null when hibernation is off).
  SavedSessions* saved() const { return saved_; }

 private:
  // Saves a live session under `as_id`: itself (it may evict its owner's oldest saves), or its
  // fork (it evicts nothing).
  Status SaveSession(LiveSession& session, const std::string& as_id,
                     std::chrono::system_clock::time_point created);

  const SessionConfig& config_;
  SessionRegistry& registry_;
  SessionLifecycle& lifecycle_;
  SavedSessions* const saved_;
  std::mutex resume_mutex_;
};

}  // namespace sandbox
