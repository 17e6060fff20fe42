// Who a session belongs to. Over HTTP with several users (named tokens, OAuth), the caller's
// subject owns the sessions it creates, and another subject naming one gets what an unknown
// id gets (session_not_found): nothing to learn, nothing to change. The subject travels with
// the thread that serves the request (an ActingSubject scope, set by the MCP connection), so
// every SessionManager call of every tool, resource read and completion is judged at one
// place (SessionRegistry::Lookup) without each caller passing it on.
//
// Outside any scope (stdio, the CLI, the reaper, a download whose signed link is its
// authority) nothing is filtered: a single-user server behaves as it always did.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/saved_budget.h"

namespace sandbox {

class ActingSubject {
 public:
  // Acts as `subject` on this thread until destroyed ("" = the single user of a server
  // without named callers). Scopes nest; the inner one wins.
  explicit ActingSubject(std::string subject);
  ~ActingSubject();
  ActingSubject(const ActingSubject&) = delete;
  ActingSubject& operator=(const ActingSubject&) = delete;

  // The subject of the innermost scope on this thread, or null outside every scope.
  static const std::string* Current();
  // Whether the calling thread may see a session owned by `owner`.
  static bool MaySee(const std::string& owner);

 private:
  std::string subject_;
  const std::string* outer_;
};

// What one subject may hold (SANDBOX_SUBJECT_*); 0 = only the server's own maxima. Applies to
// named subjects only: the single user of a server is held to the server's limits alone.
struct SubjectQuota {
  int max_sessions = 0;           // live sessions at once
  uint64_t max_memory_bytes = 0;  // per session
  double max_cpus = 0;            // per session
  SavedBudget saved = {};         // hibernated and forked sessions kept on disk
};

// Fits a new session's requested memory and CPU to `quota`: an explicit request above it is
// refused (kInvalidArgument naming the quota), and a server default above it is lowered to it
// (written into `memory_bytes` / `cpus` as if requested).
Status FitToQuota(const SubjectQuota& quota, const Limits& defaults,
                  std::optional<uint64_t>& memory_bytes, std::optional<double>& cpus);

}  // namespace sandbox
