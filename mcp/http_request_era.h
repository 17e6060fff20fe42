// Which era a POST /mcp belongs to (2026-07-28 basic/versioning.mdx), from its
// MCP-Protocol-Version and Mcp-Session-Id headers and its body alone: a modern request is
// served on its own, a legacy one in the transport session its id names, or opens one with
// initialize. A pure function, so every combination is testable without a server.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sandbox::mcp {

using Json = nlohmann::json;

inline constexpr char kSessionHeader[] = "Mcp-Session-Id";
inline constexpr char kVersionHeader[] = "MCP-Protocol-Version";
// Requests without the version header are taken to speak 2025-03-26 (basic/transports).
inline constexpr char kDefaultHeaderVersion[] = "2025-03-26";

enum class HttpPostEra {
  kModern,       // a stateless 2026-07-28 request: served by a connection of its own
  kInSession,    // legacy, in the transport session its Mcp-Session-Id names
  kOpenSession,  // legacy initialize without a session id: opens a transport session
  kSessionless,  // neither: a 2025 client that skipped initialize or lost its session id
};

// A modern revision in MCP-Protocol-Version makes a stateless modern request (a session id
// that comes along is ignored), and so does, without a session, per-request _meta or a
// revision this server does not know (answered with the modern errors); a session or an
// initialize (under a legacy or no version header) is legacy.
HttpPostEra DecidePostEra(std::string_view version_header, std::string_view session_id,
                          const Json& message);

// True when `message` is an initialize request (an object with an id and that method).
bool IsInitializeRequest(const Json& message);

// The revision a legacy request's MCP-Protocol-Version names: the header, or 2025-03-26 when
// it is absent. Whether the server speaks it is the caller's question.
std::string LegacyHeaderVersion(std::string_view version_header);

}  // namespace sandbox::mcp
