#include "runtime/session/quota_claim.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "runtime/base/units.h"

namespace sandbox {

namespace {

struct Remembered {
  std::mutex mutex;
  std::unordered_map<std::string, QuotaClaim> claims;
  std::deque<std::string> order;  // first remembered first; may hold forgotten names
};

Remembered& Claims() {
  static Remembered remembered;
  return remembered;
}

// A size member: bytes, or a size such as "512m"; nullopt below `least` or malformed.
std::optional<uint64_t> ClaimBytes(const nlohmann::json& value, uint64_t least) {
  std::optional<uint64_t> bytes;
  if (value.is_number_integer() && value.get<int64_t>() > 0) {
    bytes = value.get<uint64_t>();
  } else if (value.is_string()) {
    if (auto parsed = ParseBytes(value.get<std::string>())) bytes = *parsed;
  }
  if (!bytes || *bytes < least) return std::nullopt;
  return bytes;
}

}  // namespace

Result<QuotaClaim> ParseQuotaClaim(const nlohmann::json& value) {
  if (!value.is_object()) return Fail(ErrorCode::kInvalidArgument, "the quota claim is no object");
  QuotaClaim claim;
  if (auto it = value.find("max_sessions"); it != value.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 10000) {
      return Fail(ErrorCode::kInvalidArgument, "max_sessions is an integer from 0 to 10000");
    }
    claim.max_sessions = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = value.find("memory"); it != value.end()) {
    auto bytes = ClaimBytes(*it, 32ull << 20);
    if (!bytes) {
      return Fail(ErrorCode::kInvalidArgument,
                  "memory is bytes or a size such as \"512m\", >= 32m");
    }
    claim.memory_bytes = bytes;
  }
  if (auto it = value.find("cpus"); it != value.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1024) {
      return Fail(ErrorCode::kInvalidArgument, "cpus is a number above 0, at most 1024");
    }
    claim.cpus = it->get<double>();
  }
  if (auto it = value.find("max_saved"); it != value.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 10000) {
      return Fail(ErrorCode::kInvalidArgument, "max_saved is an integer from 0 to 10000");
    }
    claim.max_saved = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = value.find("saved_bytes"); it != value.end()) {
    auto bytes = ClaimBytes(*it, 1ull << 20);
    if (!bytes) {
      return Fail(ErrorCode::kInvalidArgument,
                  "saved_bytes is bytes or a size such as \"1g\", >= 1m");
    }
    claim.saved_bytes = bytes;
  }
  return claim;
}

SubjectQuota ApplyQuotaClaim(SubjectQuota settings, const QuotaClaim& claim,
                             const Limits& server_limits, int server_max_sessions) {
  if (claim.max_sessions) {
    settings.max_sessions = std::min(*claim.max_sessions, server_max_sessions);
  }
  if (claim.memory_bytes) {
    settings.max_memory_bytes = server_limits.memory_bytes > 0
                                    ? std::min(*claim.memory_bytes, server_limits.memory_bytes)
                                    : *claim.memory_bytes;
  }
  if (claim.cpus) {
    settings.max_cpus =
        server_limits.cpus > 0 ? std::min(*claim.cpus, server_limits.cpus) : *claim.cpus;
  }
  if (claim.max_saved) settings.saved.max_saved = *claim.max_saved;
  if (claim.saved_bytes) settings.saved.max_bytes = *claim.saved_bytes;
  return settings;
}

void RememberQuotaClaim(const std::string& subject, std::optional<QuotaClaim> claim) {
  Remembered& remembered = Claims();
  std::lock_guard<std::mutex> lock(remembered.mutex);
  if (!claim) {
    remembered.claims.erase(subject);
    return;
  }
  auto [it, inserted] = remembered.claims.insert_or_assign(subject, *claim);
  if (!inserted) return;
  remembered.order.push_back(subject);
  while (remembered.claims.size() > kMaxRememberedClaims ||
         remembered.order.size() > 2 * kMaxRememberedClaims) {
    remembered.claims.erase(remembered.order.front());
    remembered.order.pop_front();
  }
}

std::optional<QuotaClaim> RememberedQuotaClaim(const std::string& subject) {
  Remembered& remembered = Claims();
  std::lock_guard<std::mutex> lock(remembered.mutex);
  auto it = remembered.claims.find(subject);
  if (it == remembered.claims.end()) return std::nullopt;
  return it->second;
}

}  // namespace sandbox
