// Docker Engine API version negotiation. The client never pins a version: it speaks
// min(the newest version it was checked against, the daemon's newest), and refuses daemons that
// cannot speak 1.41 (Docker 20.10) or that no longer accept that version (Docker 29 raised its
// minimum to 1.44). Pure functions.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox::docker {

struct ApiVersion {
  int major = 1;
  int minor = 0;
  auto operator<=>(const ApiVersion&) const = default;
  std::string ToString() const;  // "1.41"
};

// The oldest version whose requests we rely on (CgroupnsMode, stats one-shot: 1.41).
inline constexpr ApiVersion kOldestApiVersion{1, 41};
// The newest version our requests were checked against (Docker 28.x). Newer daemons are spoken
// to at this version, which they keep supporting until they raise their minimum above it.
inline constexpr ApiVersion kNewestApiVersion{1, 51};

// Parses "1.41" (the API-Version header of /_ping, ApiVersion of /version).
Result<ApiVersion> ParseApiVersion(std::string_view text);

// The version to use with a daemon whose newest version is `server_max` and oldest accepted
// version is `server_min` (absent when unknown). Fails with kSandboxUnavailable, naming both
// sides, when there is no common version at or above kOldestApiVersion.
Result<ApiVersion> NegotiateApiVersion(ApiVersion server_max,
                                       std::optional<ApiVersion> server_min = std::nullopt);

}  // namespace sandbox::docker
