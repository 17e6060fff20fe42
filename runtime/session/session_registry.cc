#include "runtime/session/session_registry.h"

#include <algorithm>
#include <utility>

#include "runtime/base/quoted.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_owner.h"

namespace sandbox {

SessionRegistry::SessionRegistry(std::string replica_id, SavedSessions* saved)
    : replica_id_(std::move(replica_id)), saved_(saved) {}

// ---------------------------------------------------------------------------- Reservation

SessionRegistry::Reservation::Reservation(SessionRegistry* registry, std::string owner)
    : registry_(registry), owner_(std::move(owner)) {}

SessionRegistry::Reservation::Reservation(Reservation&& other) noexcept
    : registry_(std::exchange(other.registry_, nullptr)), owner_(std::move(other.owner_)) {}

SessionRegistry::Reservation::~Reservation() {
  if (registry_ == nullptr) return;
  std::lock_guard<std::mutex> lock(registry_->mutex_);
  --registry_->creating_;
  if (--registry_->creating_by_owner_[owner_] == 0) registry_->creating_by_owner_.erase(owner_);
}

Result<SessionRegistry::Reservation> SessionRegistry::Reserve(const std::string& owner,
                                                              int max_sessions,
                                                              int owner_max_sessions) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int>(sessions_.size()) + creating_ >= max_sessions) {
    return Fail(ErrorCode::kMaxSessions,
                "the server already runs its maximum of {} sessions; close one "
                "(sandbox_close_session) and try again",
                max_sessions);
  }
  if (!owner.empty() && owner_max_sessions > 0) {
    int owned = creating_by_owner_[owner];
    for (const auto& [id, open] : sessions_) owned += open->owner == owner ? 1 : 0;
    if (owned >= owner_max_sessions) {
      return Fail(ErrorCode::kMaxSessions,
                  "you already have your maximum of {} live sessions "
                  "(SANDBOX_SUBJECT_MAX_SESSIONS, or your token's quota claim); close one "
                  "(sandbox_close_session) and try again",
                  owner_max_sessions);
    }
  }
  ++creating_;
  ++creating_by_owner_[owner];
  return Reservation(this, owner);
}

int SessionRegistry::creating() {
  std::lock_guard<std::mutex> lock(mutex_);
  return creating_;
}

// ---------------------------------------------------------------------------- The map

void SessionRegistry::Add(const std::shared_ptr<LiveSession>& session) {
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_.emplace(session->id, session);
}

std::shared_ptr<LiveSession> SessionRegistry::Remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto session = std::move(it->second);
  sessions_.erase(it);
  return session;
}

void SessionRegistry::RemoveIf(const std::shared_ptr<LiveSession>& session) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(session->id);
  if (it != sessions_.end() && it->second == session) sessions_.erase(it);
}

std::unordered_map<std::string, std::shared_ptr<LiveSession>> SessionRegistry::TakeAll() {
  std::unordered_map<std::string, std::shared_ptr<LiveSession>> sessions;
  std::lock_guard<std::mutex> lock(mutex_);
  sessions.swap(sessions_);
  return sessions;
}

std::shared_ptr<LiveSession> SessionRegistry::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

bool SessionRegistry::IsLive(const std::string& id) {
  std::unique_lock<std::mutex> lock(mutex_);
  WaitWhileHibernating(lock, id);
  return sessions_.count(id) > 0;
}

std::vector<std::shared_ptr<LiveSession>> SessionRegistry::Visible() {
  std::vector<std::shared_ptr<LiveSession>> sessions;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, session] : sessions_) {
    if (ActingSubject::MaySee(session->owner)) sessions.push_back(session);
  }
  return sessions;
}

std::vector<std::string> SessionRegistry::Ids(
    const std::function<bool(const LiveSession&)>& select) {
  std::vector<std::string> ids;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, session] : sessions_) {
    if (select(*session)) ids.push_back(id);
  }
  return ids;
}

size_t SessionRegistry::Count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

size_t SessionRegistry::CountNotLive(const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<size_t>(std::count_if(
      ids.begin(), ids.end(), [this](const std::string& id) { return sessions_.count(id) == 0; }));
}

// ---------------------------------------------------------------------------- Hibernation

void SessionRegistry::BeginHibernating(LiveSession& session) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(session.id);
  if (it != sessions_.end() && it->second.get() == &session) sessions_.erase(it);
  hibernating_.push_back(session.id);
  if (session.saving_to_hibernate) {
    // From now on a call waiting for the save waits for the hibernation, by its id.
    session.saving_to_hibernate = false;
    hibernated_.notify_all();
  }
}

void SessionRegistry::MarkSaving(LiveSession& session, bool saving) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    session.saving_to_hibernate = saving;
  }
  if (!saving) hibernated_.notify_all();
}

bool SessionRegistry::WaitWhileSaving(const LiveSession& session) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!session.saving_to_hibernate) return false;
  hibernated_.wait(lock, [&] { return !session.saving_to_hibernate; });
  return true;
}

void SessionRegistry::EndHibernating(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hibernating_.erase(std::find(hibernating_.begin(), hibernating_.end(), id));
  }
  hibernated_.notify_all();
}

void SessionRegistry::WaitWhileHibernating(std::unique_lock<std::mutex>& lock,
                                           const std::string& id) {
  hibernated_.wait(lock, [&] {
    return std::find(hibernating_.begin(), hibernating_.end(), id) == hibernating_.end();
  });
}

// ---------------------------------------------------------------------------- Lookup

Result<SessionRegistry::Found> SessionRegistry::Lookup(const std::string& id) {
  auto parsed = ParseSessionId(id);
  if (!parsed) {
    return Fail(ErrorCode::kInvalidSessionId, "{} is not a session id (expected {})", Quoted(id),
                kSessionIdShape);
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    WaitWhileHibernating(lock, id);
    auto it = sessions_.find(id);
    // Another subject's session is answered as an unknown one, word for word.
    if (it != sessions_.end() && ActingSubject::MaySee(it->second->owner)) {
      return Found{.live = it->second, .saved = false};
    }
  }
  if (SavedAndVisible(id)) return Found{.live = nullptr, .saved = true};
  if (!parsed->replica.empty() && parsed->replica != replica_id_) {
    // The proxy sends a call to the replica its handle names unless that one is down (then it
    // places the call anywhere): say so, worded for a model to recover by starting afresh.
    Error error = MakeError(
        ErrorCode::kSessionNotFound,
        "session {} lived on replica {}, which is not reachable (stopped, restarted or cut off); "
        "its state is not available here. Create a new session (sandbox_create_session, or omit "
        "session_id) and redo its setup",
        id, parsed->replica);
    error.details = {{"reason", "replica_unavailable"}, {"replica", std::string(parsed->replica)}};
    return Fail(std::move(error));
  }
  return Fail(ErrorCode::kSessionNotFound,
              "session {} does not exist: it was closed, expired, or lost when this {} restarted; "
              "create a new one",
              id, replica_id_.empty() ? "server" : "replica");
}

bool SessionRegistry::NamesAnotherReplica(const std::string& id) const {
  auto parsed = ParseSessionId(id);
  return parsed && !parsed->replica.empty() && parsed->replica != replica_id_;
}

bool SessionRegistry::SavedAndVisible(const std::string& id) {
  // Only the replica an id names resumes, shows, forks or deletes its save: replicas may share
  // a state dir, and a sibling that resumed a stopped replica's session would leave it live
  // twice once that replica is back under its id (Lookup then says replica_unavailable).
  if (NamesAnotherReplica(id)) return false;
  if (saved_ == nullptr || !saved_->Contains(id)) return false;
  auto meta = saved_->Meta(id);
  // Damaged metadata names no owner: only a caller who may see the single user's sessions
  // (stdio, the CLI, a server without named callers) learns of it, from the error it gets.
  return ActingSubject::MaySee(meta ? meta->owner : std::string());
}

}  // namespace sandbox
