// Session ids: the handle a client holds for a sandbox session, and over HTTP a bearer
// capability, so its random part is 128 bits from the kernel's CSPRNG (SEP-2567 asks that of
// unauthenticated handles). A server started with a replica id (SANDBOX_REPLICA_ID) puts it in
// the id, so that a stock proxy in front of several replicas can send each call to the replica
// that holds the session by reading a prefix, with no catalog of its own:
//   sess_<32 hex>              a single host
//   sess_<replica>_<32 hex>    replica <replica>, e.g. sess_r2_4f0c...
// A replica id is a DNS label ([a-z][a-z0-9-]*, at most 63, no trailing '-': a StatefulSet pod's
// name fits), so it never holds the '_' that separates it and a proxy can cut the id at '_'
// (HAProxy: field(2,_)).
// Ids of the earlier form, sess_<12 hex>, are still recognized as ids (a client holding one
// after an upgrade hears that its session is gone, not that its handle is malformed); none is
// made any more. Clients must treat ids as opaque: the prefix is a routing hint, not authority.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/sandbox_layout.h"

namespace sandbox {

inline constexpr size_t kMaxReplicaIdLength = layout::kMaxReplicaIdLength;

// Whether `replica` is a valid replica id.
bool IsValidReplicaId(std::string_view replica);

// A new id, naming `replica` when it is not "" (which must be valid).
std::string NewSessionId(std::string_view replica = {});

struct ParsedSessionId {
  std::string_view replica;  // "" when the id names none
};
// The parts of a well-formed id, or nullopt.
std::optional<ParsedSessionId> ParseSessionId(std::string_view id);
bool IsValidSessionId(std::string_view id);

// How to tell a client what a session id looks like (for schemas and error messages).
inline constexpr char kSessionIdShape[] =
    "sess_ followed by 32 hex digits, or on a replica sess_<replica>_<32 hex digits>";

}  // namespace sandbox
