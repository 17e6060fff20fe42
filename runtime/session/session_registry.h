// SessionRegistry: which sessions this server holds, and what a session id names for the calling
// subject. It owns the map of live sessions, the count of those being created (held against the
// server's cap and each subject's quota), and the ids being hibernated, and it answers a lookup
// by the rules every call of the session manager goes through:
//   - an id that is not one is kInvalidSessionId;
//   - a live session another subject owns reads as an unknown one (session_owner.h);
//   - a session being hibernated is waited for (its sandbox torn down), then found saved;
//   - a saved session is found only on the replica its id names, by a subject that may see it;
//   - an id naming another replica that is not here says so (replica_unavailable).
// What is done with a session found (a call, a resume, a save) is the manager's business.
//
// Thread-safe. One mutex guards the map, the creation counts and the hibernating ids; it is
// never held while a session's sandbox or agent is used or the saved sessions are read, and a
// waiter for a hibernation waits on it with a condition variable.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/session/live_session.h"
#include "runtime/session/saved_sessions.h"

namespace sandbox {

class SessionRegistry {
 public:
  // `saved`: the saved sessions (null: hibernation off); must outlive the registry.
  // `replica_id`: this server's (SessionConfig::replica_id; "" on a single host).
  SessionRegistry(std::string replica_id, SavedSessions* saved);

  // A place for a session being created, held against the caps until it is listed or given up
  // (destroyed). Move-only.
  class Reservation {
   public:
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&&) = delete;
    Reservation(const Reservation&) = delete;
    ~Reservation();

   private:
    friend class SessionRegistry;
    Reservation(SessionRegistry* registry, std::string owner);
    SessionRegistry* registry_;
    std::string owner_;
  };
  // kMaxSessions when `max_sessions` are open or being created, or when `owner` (a named
  // subject; "" = the single user, not counted) holds `owner_max_sessions` (0 = no limit).
  Result<Reservation> Reserve(const std::string& owner, int max_sessions, int owner_max_sessions);
  // Sessions being created now.
  int creating();

  // Lists a started session under its id; a session listed there already stays.
  void Add(const std::shared_ptr<LiveSession>& session);
  // Unlists `id`, and returns what was listed under it (null: nothing).
  std::shared_ptr<LiveSession> Remove(const std::string& id);
  // Unlists `session` if it is the one listed under its id (a resume may have listed another).
  void RemoveIf(const std::shared_ptr<LiveSession>& session);
  // Unlists every session, and returns them.
  std::unordered_map<std::string, std::shared_ptr<LiveSession>> TakeAll();

  // The session listed under `id`, whoever owns it; null if none. Does not wait.
  std::shared_ptr<LiveSession> Find(const std::string& id);
  // Whether `id` is live, once a hibernation of it in progress is over.
  bool IsLive(const std::string& id);
  // The live sessions the calling subject may see.
  std::vector<std::shared_ptr<LiveSession>> Visible();
  // The ids of the live sessions `select` picks (called with the lock held: it must only read
  // the session's atomics and fixed fields).
  std::vector<std::string> Ids(const std::function<bool(const LiveSession&)>& select);
  size_t Count();
  // How many of `ids` are not live.
  size_t CountNotLive(const std::vector<std::string>& ids);

  // A hibernation: `session` is saved; it is unlisted (if it is the one listed) and its id
  // marked as being hibernated, together, so a lookup of it waits from now on...
  void BeginHibernating(LiveSession& session);
  // ...until its sandbox is gone.
  void EndHibernating(const std::string& id);
  // A hibernation is taking `session`'s busy lease to save it (true), or its save failed and
  // the lease is given back (false; a successful save ends it in BeginHibernating).
  void MarkSaving(LiveSession& session, bool saving);
  // Waits while `session` is being saved for hibernation; false if it was not (then whoever
  // holds it busy is a call, and the caller says session_busy), true once the save is over
  // (the caller looks the id up again: hibernated now, or live again after a failed save).
  bool WaitWhileSaving(const LiveSession& session);

  // What `id` names for the calling subject: a live session, or (live null, saved true) a saved
  // one to resume; else the error a caller gets (see the rules above).
  struct Found {
    std::shared_ptr<LiveSession> live;
    bool saved = false;
  };
  Result<Found> Lookup(const std::string& id);
  // Whether `id` is saved and the calling subject may see it, on this replica: another
  // subject's saved session reads as none, as a live one does, and so does one whose id names
  // another replica (replicas may share a state dir; only the one an id names resumes it).
  bool SavedAndVisible(const std::string& id);
  // Whether `id` names a replica other than this one (replicas sharing a state dir each show
  // and resume only their own saves).
  bool NamesAnotherReplica(const std::string& id) const;

 private:
  void WaitWhileHibernating(std::unique_lock<std::mutex>& lock, const std::string& id);

  const std::string replica_id_;
  SavedSessions* const saved_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<LiveSession>> sessions_;  // guarded by mutex_
  int creating_ = 0;                                                        // guarded by mutex_
  std::unordered_map<std::string, int> creating_by_owner_;                  // guarded by mutex_
  std::vector<std::string> hibernating_;                                    // guarded by mutex_
  // Signalled by EndHibernating, BeginHibernating and MarkSaving(false).
  std::condition_variable hibernated_;
};

}  // namespace sandbox
