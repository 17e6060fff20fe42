// 2025-era transport session ids (the Mcp-Session-Id header of Streamable HTTP), and what a
// server does with one it does not hold. With a replica id they name the replica that issued
// them, mcps_<replica>_<32 hex>, so a proxy can send a 2025 request with no session handle in
// its body (tools/list, a create) to that replica; without one they are 32 hex digits, as
// before replicas existed.
//
// A replica that receives a well-formed id of another replica adopts it (the proxy found the
// issuer down, or a 2025 client whose transport lives on r1 names a session on r2 in its body):
// neither official SDK starts a new transport session on a 404, so refusing would strand the
// client until it restarts. So does a replica restarted under its id (a rolling update, a
// replaced pod) with its own ids of its earlier run: the first 8 of an id's hex digits name the
// run of the process that issued it (drawn at its start; the other 24, 96 bits, are random).
// An unknown id of this replica's own run (or of a single host) is answered 404, as the 2025
// transport says of a session that ended.
#pragma once

#include <string>
#include <string_view>

namespace sandbox::mcp {

inline constexpr char kTransportIdPrefix[] = "mcps_";

// How many hex digits of an id name the issuing process's run.
inline constexpr size_t kTransportRunHexDigits = 8;

// A new id: mcps_<replica>_<run><24 hex> (`run`: kTransportRunHexDigits lowercase hex digits;
// "" = 32 random), or 32 hex digits when `replica` is "".
std::string NewTransportSessionId(std::string_view replica, std::string_view run = {});

// The replica a well-formed mcps_<replica>_<32 hex> id names, or "" for any other id.
std::string_view TransportIdReplica(std::string_view id);

enum class UnknownTransportId {
  kNotFound,  // 404: it ended, expired, or was never issued here
  kAdopt,     // another replica's: serve it here under the same id
};
// What to do with an Mcp-Session-Id this server does not hold, as replica `own_replica` ("" =
// a single host, which adopts nothing) in run `own_run` ("" = ids carry no run: its own are
// never adopted).
UnknownTransportId JudgeUnknownTransportId(std::string_view id, std::string_view own_replica,
                                           std::string_view own_run = {});

}  // namespace sandbox::mcp
