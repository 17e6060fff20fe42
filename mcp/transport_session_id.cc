#include "mcp/transport_session_id.h"

#include "runtime/base/random_id.h"
#include "runtime/session/session_id.h"

namespace sandbox::mcp {

namespace {

constexpr size_t kRandomHexDigits = 32;  // 128 bits

bool IsLowerHex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string NewTransportSessionId(std::string_view replica) {
  std::string random = RandomHex(kRandomHexDigits / 2);
  if (replica.empty()) return random;
  return std::string(kTransportIdPrefix) + std::string(replica) + "_" + random;
}

std::string_view TransportIdReplica(std::string_view id) {
  std::string_view prefix = kTransportIdPrefix;
  if (id.substr(0, prefix.size()) != prefix) return {};
  std::string_view rest = id.substr(prefix.size());
  auto separator = rest.find('_');
  if (separator == std::string_view::npos) return {};
  std::string_view replica = rest.substr(0, separator);
  std::string_view random = rest.substr(separator + 1);
  if (!IsValidReplicaId(replica) || random.size() != kRandomHexDigits || !IsLowerHex(random)) {
    return {};
  }
  return replica;
}

UnknownTransportId JudgeUnknownTransportId(std::string_view id, std::string_view own_replica) {
  std::string_view issuer = TransportIdReplica(id);
  if (own_replica.empty() || issuer.empty() || issuer == own_replica) {
    return UnknownTransportId::kNotFound;
  }
  return UnknownTransportId::kAdopt;
}

}  // namespace sandbox::mcp
