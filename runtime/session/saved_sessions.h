// SavedSessions: the hibernated sessions of one state dir, on disk (docs/sessions.md "Hibernate,
// resume, fork"). One directory per session id under <state_dir>/hibernated/<id>/: `state.tar`, the
// archive the session's sandbox wrote (runtime/agent/session_state.py: its files and its
// interpreter state), and `meta.json`, what the server knows about it (name, image, limits,
// size, SHA-256, when it was saved). The server never unpacks or unpickles the archive: it is
// hostile data that only the session's next sandbox loads. What this class does with it is
// move bytes and judge them: sizes within the caps, the digest unchanged since it was written,
// the files regular and not links, the saved copy not older than its TTL. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/saved_budget.h"

namespace sandbox {

// Something the save or the restore could not keep, for the model to redo.
struct NotRestored {
  std::string name;  // the global's name, a file's path under the data dir, or "cwd"
  std::string type;  // "socket.socket", "threading.Thread", "symlink", ...
  std::string reason;
};

struct SavedSessionMeta {
  std::string id;
  std::string name;
  std::string image;
  std::string backend;  // the backend it ran on ("namespace" | "docker"); informative
  Limits limits;        // requested (bounded again by the configured maxima on resume)
  bool egress = false;
  std::chrono::system_clock::time_point created;   // when the session was first created
  std::chrono::system_clock::time_point saved_at;  // when this archive was written
  uint64_t size = 0;                               // state.tar's size in bytes
  std::string sha256;                              // state.tar's digest (lowercase hex)
  std::string mechanism;                           // "dill" | "pickle" (the image had no dill)
  std::vector<NotRestored> not_saved;              // what the save left out
  std::string owner;  // the subject that owns it (session_owner.h); "" = the single user
};

struct SavedSessionsConfig {
  std::string dir;                                               // <state_dir>/hibernated
  uint64_t max_total_bytes = 10ull << 30;                        // SANDBOX_SAVED_MAX_BYTES
  std::chrono::seconds ttl = std::chrono::hours(24 * 7);         // SANDBOX_SAVED_TTL
  std::function<std::chrono::system_clock::time_point()> clock;  // empty: the system clock
};

class SavedSessions {
 public:
  explicit SavedSessions(SavedSessionsConfig config);

  // Stores `archive` as the saved state of meta.id (replacing an earlier one): fills in size,
  // sha256 and saved_at. Within max_total_bytes and meta.owner's `budget` as PlanSave decides
  // (saved_budget.h): kSelf evicts (and logs) that owner's oldest other saves until it fits,
  // kCopy evicts nothing; either is refused, naming the budget, when it cannot fit.
  Status Save(SavedSessionMeta meta, std::string_view archive, SaveKind kind = SaveKind::kSelf,
              const SavedBudget& budget = {});
  // The metadata of a saved session, checked: kSessionNotFound when there is none (or it
  // expired: then it is deleted), kSandboxUnavailable with what is wrong when its files were
  // damaged or tampered with.
  Result<SavedSessionMeta> Meta(const std::string& id);
  // The archive, after checking its size and digest against the metadata.
  Result<std::string> LoadArchive(const SavedSessionMeta& meta);
  bool Contains(const std::string& id);
  // Deletes what was saved of `id`; true if there was something.
  bool Remove(const std::string& id);
  // Copies a saved session under a new id (fork of a hibernated session), within its owner's
  // `budget` and the cap: a kCopy save.
  Status Copy(const std::string& from, const std::string& to, const std::string& to_name,
              const SavedBudget& budget = {});
  // Every saved session whose metadata reads, oldest saved first (damaged ones are listed by
  // `Damaged`).
  std::vector<SavedSessionMeta> List();
  std::vector<std::string> Damaged();
  // Deletes saved sessions older than the TTL; returns how many.
  int ExpireOld();
  uint64_t TotalBytes();
  // What `owner`'s saved sessions (hibernated, forked, or resumed and not saved again) take.
  SavedUsage UsageOf(const std::string& owner);

  const SavedSessionsConfig& config() const { return config_; }

 private:
  std::chrono::system_clock::time_point Now() const;
  std::string DirOf(const std::string& id) const;
  Result<SavedSessionMeta> ReadMeta(const std::string& id);
  std::vector<std::string> Ids();
  bool RemoveLocked(const std::string& id);
  // Every readable save, oldest saved first, for PlanSave.
  std::vector<StoredSave> StoredLocked();

  SavedSessionsConfig config_;
  std::mutex mutex_;
};

// The JSON a restore prints as its last line, turned into names: {"restored": [..],
// "not_restored": [{name, type, reason}], "mechanism"}. Hostile text: parsed, bounded, never run.
struct RestoreReport {
  std::vector<std::string> restored;
  std::vector<NotRestored> not_restored;
  std::string mechanism;
};
Result<RestoreReport> ParseRestoreReport(std::string_view stdout_text);
// The same for the save's last line: {"size", "mechanism", "skipped": [...]}.
Result<RestoreReport> ParseSaveReport(std::string_view stdout_text);

}  // namespace sandbox
