// The session manager's busy lease (SessionManager::BusyLease): one agent exchange at a time per
// session. Shared by the manager's .cc files (session_manager.cc, session_manager_hibernation.cc),
// not by its callers.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "runtime/agent/host/agent_client.h"
#include "runtime/base/result.h"
#include "runtime/session/session_manager.h"

namespace sandbox {

// Holds a session's busy flag for one agent exchange; releases it (and stamps last use) on
// destruction.
class SessionManager::BusyLease {
 public:
  BusyLease(std::shared_ptr<Session> session, SessionManager& manager)
      : session_(std::move(session)), manager_(&manager) {
    ++manager_->calls_in_flight_;
  }
  BusyLease(BusyLease&&) noexcept = default;
  BusyLease& operator=(BusyLease&&) = delete;
  BusyLease(const BusyLease&) = delete;
  ~BusyLease() {
    if (!session_) return;
    manager_->MarkActivity();
    --manager_->calls_in_flight_;
    session_->Touch(manager_->Now());
    if (session_->preload_priority && !session_->closed) {
      session_->preload_priority->CallEnds(session_->agent->preload_pending());
    }
    // An agent that stopped answering (stopped, hung) or whose stream broke serves nothing
    // more: the session is closed, not left listed as idle and failing every call.
    if (!session_->closed) {
      if (std::string why = session_->agent->broken_reason(); !why.empty()) {
        manager_->Retire(session_, why);
      }
    }
    session_->busy = false;
  }
  Session& operator*() const { return *session_; }
  const std::shared_ptr<Session>& shared() const { return session_; }
  Session* operator->() const { return session_.get(); }

 private:
  std::shared_ptr<Session> session_;
  SessionManager* manager_;
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
