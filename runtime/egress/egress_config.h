// The server's egress configuration (SANDBOX_EGRESS_ALLOW, SANDBOX_EGRESS_MAX_BYTES,
// SANDBOX_INDEX_URL) as the session manager and the tools use it. Plain data.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/result.h"
#include "runtime/egress/allowlist.h"
#include "runtime/egress/egress_proxy.h"

namespace sandbox::egress {

struct EgressConfig {
  Allowlist allow;  // empty: sandboxes have no network (the default)
  EgressLimits limits;
  std::string index_url;  // the package index pip uses in sandboxes ("" = pip's own default)
  bool enabled() const { return !allow.empty(); }
};

// When egress is on: allows the index URL's host (and port) implicitly, and picks PyPI's
// index when none is set and pypi.org is allowed. Fails on a URL that is not http(s)://host…
Status ApplyIndexUrl(EgressConfig& config);

// The host and port of an http(s) URL; kInvalidArgument otherwise.
struct UrlHost {
  std::string host;  // without brackets
  uint16_t port = 0;
};
Result<UrlHost> HostOfUrl(std::string_view url);

}  // namespace sandbox::egress
