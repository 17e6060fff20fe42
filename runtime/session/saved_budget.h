// Who may keep how much saved state (docs/many-users.md). Saved sessions share one
// disk cap (SANDBOX_SAVED_MAX_BYTES), and each named subject has a budget of its own within it
// (SANDBOX_SUBJECT_MAX_SAVED, SANDBOX_SUBJECT_SAVED_BYTES, or its token's quota claim). What one
// subject does never costs another its saved work: making room evicts only the saving subject's
// own oldest saves, and only for a session saving itself (idle hibernation, an orderly stop, a
// drain), which would otherwise be closed and lose everything. A fork is new data on demand: it
// evicts nothing and is refused, naming the budget, when it does not fit.
//
// A pure decision over the saves on disk, so each rule is a unit test; SavedSessions applies it
// under its lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox {

// What one named subject may keep saved; 0 = no cap of its own (the server's cap still holds).
// The single user of a server without named callers ("" owner) has the server's cap alone.
struct SavedBudget {
  int max_saved = 0;       // saved sessions (hibernated or forked), SANDBOX_SUBJECT_MAX_SAVED
  uint64_t max_bytes = 0;  // their bytes together, SANDBOX_SUBJECT_SAVED_BYTES
};

enum class SaveKind {
  kSelf,  // a session saving itself: may evict its owner's oldest other saves
  kCopy,  // a fork: a new saved session; evicts nothing, refused when it does not fit
};

// A save on disk, or the one about to be written.
struct StoredSave {
  std::string id;
  std::string owner;
  uint64_t size = 0;
};

// Decides whether `incoming` may be stored beside `stored` (oldest saved first; an earlier save
// of incoming.id is replaced, so it is not counted): the ids to evict first (the owner's own,
// oldest first), or why not. kUploadTooLarge when the save alone is above the server's cap or
// its owner's bytes; kMaxSessions (details reason=saved_budget, budget=<the setting>) when it
// does not fit beside what is kept and may not, or cannot, evict enough of its owner's own.
Result<std::vector<std::string>> PlanSave(const std::vector<StoredSave>& stored,
                                          const StoredSave& incoming, SaveKind kind,
                                          const SavedBudget& budget, uint64_t max_total_bytes);

// One subject's saved sessions, for the list and the quota checks.
struct SavedUsage {
  int count = 0;
  uint64_t bytes = 0;
};
SavedUsage UsageOf(const std::vector<StoredSave>& stored, const std::string& owner);

}  // namespace sandbox
