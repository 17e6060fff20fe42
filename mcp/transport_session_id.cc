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

std::string NewTransportSessionId(std::string_view replica, std::string_view run) {
  if (replica.empty()) return RandomHex(kRandomHexDigits / 2);
  std::string digits = run.empty()
                           ? RandomHex(kRandomHexDigits / 2)
                           : std::string(run) + RandomHex((kRandomHexDigits - run.size()) / 2);
  return std::string(kTransportIdPrefix) + std::string(replica) + "_" + digits;
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

UnknownTransportId JudgeUnknownTransportId(std::string_view id, std::string_view own_replica,
                                           std::string_view own_run) {
  std::string_view issuer = TransportIdReplica(id);
  if (own_replica.empty() || issuer.empty()) return UnknownTransportId::kNotFound;
  if (issuer != own_replica) return UnknownTransportId::kAdopt;
  // Our own prefix: issued by an earlier run of this replica (it restarted under its id), or
  // by this run and since ended.
  std::string_view digits = id.substr(id.size() - kRandomHexDigits);
  bool earlier_run = own_run.size() == kTransportRunHexDigits &&
                     digits.substr(0, kTransportRunHexDigits) != own_run;
  return earlier_run ? UnknownTransportId::kAdopt : UnknownTransportId::kNotFound;
}

}  // namespace sandbox::mcp
