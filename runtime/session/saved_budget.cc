#include "runtime/session/saved_budget.h"

#include <utility>

#include "runtime/base/units.h"

namespace sandbox {

namespace {

constexpr const char* kServerCap = "SANDBOX_SAVED_MAX_BYTES";
constexpr const char* kSubjectCount = "SANDBOX_SUBJECT_MAX_SAVED";
constexpr const char* kSubjectBytes = "SANDBOX_SUBJECT_SAVED_BYTES";

// A refusal a client can act on: the code a full server answers, and which budget it hit.
Error BudgetError(const char* budget, std::string message) {
  Error error = MakeError(ErrorCode::kMaxSessions, "{}", message);
  error.details = {{"reason", "saved_budget"}, {"budget", budget}};
  return error;
}

std::string Whose(const std::string& owner) {
  return owner.empty() ? std::string() : " (or your token's quota claim)";
}

}  // namespace

SavedUsage UsageOf(const std::vector<StoredSave>& stored, const std::string& owner) {
  SavedUsage usage;
  for (const auto& save : stored) {
    if (save.owner != owner) continue;
    ++usage.count;
    usage.bytes += save.size;
  }
  return usage;
}

Result<std::vector<std::string>> PlanSave(const std::vector<StoredSave>& stored,
                                          const StoredSave& incoming, SaveKind kind,
                                          const SavedBudget& subject_budget,
                                          uint64_t max_total_bytes) {
  // The single user has the server's cap alone, as with every per-subject quota.
  const SavedBudget budget = incoming.owner.empty() ? SavedBudget{} : subject_budget;
  const bool fork = kind == SaveKind::kCopy;
  const char* what = fork ? "the fork" : "the session's saved state";
  if (incoming.size > max_total_bytes) {
    return Fail(ErrorCode::kUploadTooLarge,
                "{} is {} bytes, above the {} bytes all saved sessions may take ({})", what,
                incoming.size, max_total_bytes, kServerCap);
  }
  if (budget.max_bytes > 0 && incoming.size > budget.max_bytes) {
    return Fail(ErrorCode::kUploadTooLarge,
                "{} is {} bytes, above the {} bytes your saved sessions may take ({}{})", what,
                incoming.size, budget.max_bytes, kSubjectBytes, Whose(incoming.owner));
  }
  uint64_t total = 0;
  std::vector<StoredSave> own;  // the owner's others, oldest first: what it may evict
  for (const auto& save : stored) {
    if (save.id == incoming.id) continue;  // replaced
    total += save.size;
    if (save.owner == incoming.owner) own.push_back(save);
  }
  SavedUsage usage = UsageOf(own, incoming.owner);
  auto count_fits = [&] { return budget.max_saved <= 0 || usage.count + 1 <= budget.max_saved; };
  auto bytes_fit = [&] {
    return budget.max_bytes == 0 || usage.bytes + incoming.size <= budget.max_bytes;
  };
  auto total_fits = [&] { return total + incoming.size <= max_total_bytes; };

  std::vector<std::string> evict;
  if (!fork) {
    for (const auto& save : own) {
      if (count_fits() && bytes_fit() && total_fits()) break;
      evict.push_back(save.id);
      --usage.count;
      usage.bytes -= save.size;
      total -= save.size;
    }
  }
  const std::string redo =
      fork ? "close a hibernated session or fork of yours (sandbox_close_session) and fork again"
           : "it stays live until its idle time-out closes it";
  if (!count_fits()) {
    return Fail(BudgetError(
        kSubjectCount,
        fmt::format("{} would make {} saved sessions of yours, above your budget of {} ({}{}); {}",
                    what, usage.count + 1, budget.max_saved, kSubjectCount, Whose(incoming.owner),
                    redo)));
  }
  if (!bytes_fit()) {
    return Fail(BudgetError(
        kSubjectBytes,
        fmt::format("{} takes {} and your saved sessions take {} of your budget of {} ({}{}); {}",
                    what, FormatBytes(incoming.size), FormatBytes(usage.bytes),
                    FormatBytes(budget.max_bytes), kSubjectBytes, Whose(incoming.owner), redo)));
  }
  if (!total_fits()) {
    return Fail(BudgetError(
        kServerCap,
        fmt::format("{} takes {} and the saved sessions on this server take {} of the {} all may "
                    "take ({}); {} evicts no other user's saved session; {}",
                    what, FormatBytes(incoming.size), FormatBytes(total),
                    FormatBytes(max_total_bytes), kServerCap, fork ? "a fork" : "a save", redo)));
  }
  return evict;
}

}  // namespace sandbox
