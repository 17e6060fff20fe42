#include "runtime/session/session_id.h"

#include "runtime/base/random_id.h"
#include "runtime/sandbox_layout.h"

namespace sandbox {

namespace {

bool IsLowerHex(std::string_view text) {
  for (char c : text) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex) return false;
  }
  return true;
}

}  // namespace

bool IsValidReplicaId(std::string_view replica) {
  if (replica.empty() || replica.size() > kMaxReplicaIdLength) return false;
  if (replica.front() < 'a' || replica.front() > 'z' || replica.back() == '-') return false;
  for (char c : replica) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string NewSessionId(std::string_view replica) {
  std::string id = layout::kSessionIdPrefix;
  if (!replica.empty()) {
    id += replica;
    id += '_';
  }
  return id + RandomHex(layout::kSessionIdHexDigits / 2);
}

std::optional<ParsedSessionId> ParseSessionId(std::string_view id) {
  std::string_view prefix = layout::kSessionIdPrefix;
  if (id.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view rest = id.substr(prefix.size());
  ParsedSessionId parsed;
  if (auto separator = rest.find('_'); separator != std::string_view::npos) {
    parsed.replica = rest.substr(0, separator);
    if (!IsValidReplicaId(parsed.replica)) return std::nullopt;
    rest.remove_prefix(separator + 1);
  }
  bool current = rest.size() == layout::kSessionIdHexDigits;
  bool earlier = parsed.replica.empty() && rest.size() == layout::kEarlierSessionIdHexDigits;
  if (!(current || earlier) || !IsLowerHex(rest)) return std::nullopt;
  return parsed;
}

bool IsValidSessionId(std::string_view id) { return ParseSessionId(id).has_value(); }

}  // namespace sandbox
