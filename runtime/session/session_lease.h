// BusyLease: a session's busy flag held for one agent exchange (one at a time per session).
// Taken by SessionLifecycle::Acquire, for the manager's calls and the hibernator's saves; given
// back to the lifecycle (SessionLifecycle::EndCall), which stamps the last use and retires a
// session whose agent broke.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "runtime/agent/host/agent_client.h"
#include "runtime/base/result.h"
#include "runtime/session/live_session.h"

namespace sandbox {

class SessionLifecycle;

class BusyLease {
 public:
  // Counts as a call in flight from now until it ends (the pool refills only when none is).
  BusyLease(std::shared_ptr<LiveSession> session, SessionLifecycle& lifecycle);
  BusyLease(BusyLease&&) noexcept = default;
  BusyLease& operator=(BusyLease&&) = delete;
  BusyLease(const BusyLease&) = delete;
  ~BusyLease();
  LiveSession& operator*() const { return *session_; }
  const std::shared_ptr<LiveSession>& shared() const { return session_; }
  LiveSession* operator->() const { return session_.get(); }

 private:
  std::shared_ptr<LiveSession> session_;
  SessionLifecycle* lifecycle_;
};

// The error of a call that left the session's agent unusable says that the session is closed
// (the lease closes it), so the caller starts a new one instead of retrying this one.
template <typename T>
Result<T> NoteRetirement(const std::unique_ptr<AgentClient>& agent, Result<T> result) {
  if (!result && !agent->broken_reason().empty()) {
    result.error().message += "; the session is closed: create a new one";
  }
  return result;
}

}  // namespace sandbox
