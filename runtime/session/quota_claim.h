// A subject's quota from its access token (SANDBOX_OAUTH_QUOTA_CLAIM): the identity provider,
// which the server already trusts to say who a caller is, may also say how much that caller gets,
// as a claim object {"max_sessions": 3, "memory": "2g", "cpus": 1.5, "max_saved": 5,
// "saved_bytes": "1g"} (every member optional; memory and saved_bytes as bytes or a size). Each
// member it names overrides the settings' per-subject quota (SANDBOX_SUBJECT_*) for that subject,
// capped by the server's own limits (SANDBOX_MEMORY_LIMIT, SANDBOX_CPU_LIMIT,
// SANDBOX_MAX_SESSIONS; saved sessions stay within SANDBOX_SAVED_MAX_BYTES, which every save is
// held to): a claim can never buy more than the server has.
//
// The quota is the subject's, not one token's or one connection's (its live sessions are counted
// across all of them), so the resource server remembers the latest claim per subject when it
// admits a token and the session manager reads it when that subject creates a session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/session_owner.h"

namespace sandbox {

struct QuotaClaim {
  std::optional<int> max_sessions;
  std::optional<uint64_t> memory_bytes;
  std::optional<double> cpus;
  std::optional<int> max_saved = {};         // SavedBudget::max_saved
  std::optional<uint64_t> saved_bytes = {};  // SavedBudget::max_bytes
};

// Reads the claim's value: an object whose members are max_sessions (integer 0..10000), memory
// (bytes, or a size such as "512m", at least 32 MiB), cpus (a number > 0), max_saved (integer
// 0..10000) and saved_bytes (bytes or a size, at least 1 MiB); unknown members are ignored.
// kInvalidArgument naming what is wrong otherwise.
Result<QuotaClaim> ParseQuotaClaim(const nlohmann::json& value);

// The settings' quota with the claim's members in place, each capped by the server's own limit.
SubjectQuota ApplyQuotaClaim(SubjectQuota settings, const QuotaClaim& claim,
                             const Limits& server_limits, int server_max_sessions);

// The latest claim admitted for `subject` (nullopt = none: the settings alone). Remembering
// nullopt forgets. At most kMaxRememberedClaims subjects are held; beyond that the oldest
// remembered is forgotten (it falls back to the settings until its next request).
inline constexpr size_t kMaxRememberedClaims = 10000;
void RememberQuotaClaim(const std::string& subject, std::optional<QuotaClaim> claim);
std::optional<QuotaClaim> RememberedQuotaClaim(const std::string& subject);

}  // namespace sandbox
