// A session's network egress, between the session manager and runtime/egress: whether a
// session gets it (the server's allowlist, narrowed by the caller's `egress: false`), the
// channel and proxy that carry it, and what the session reports about it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"
#include "runtime/egress/egress_config.h"
#include "runtime/egress/egress_proxy.h"

namespace sandbox {

// The egress policy in force for one session, as status reports it.
struct EgressInfo {
  bool enabled = false;
  std::vector<std::string> allow;  // canonical entries; empty when disabled
  std::string index_url;           // "" = none / pip's default
  uint64_t max_bytes = 0;
  egress::EgressUsage usage;
};

// Whether a session gets egress: on when the server has an allowlist unless the caller asks
// for false; asking for true on a server without one is kInvalidArgument (narrow, never widen).
Result<bool> SessionWantsEgress(const egress::EgressConfig& config, std::optional<bool> requested);

class SessionEgress {
 public:
  // Makes the channel, starts the proxy on the server's end, and adds to `spec` what the
  // sandbox needs: the channel's other end and PIP_INDEX_URL. Call Started() once the backend
  // has passed that end in (the server's copy is closed then).
  static Result<std::unique_ptr<SessionEgress>> Start(const egress::EgressConfig& config,
                                                      const std::string& session_id,
                                                      SandboxSpec& spec);
  void Started() { sandbox_end_.Reset(); }
  void Shutdown() { proxy_->Shutdown(); }
  egress::EgressUsage Usage() const { return proxy_->Usage(); }

 private:
  std::unique_ptr<egress::EgressProxy> proxy_;
  Fd sandbox_end_;
};

// One sentence for tool descriptions: which hosts sandboxes may reach, or that they have no
// network (so a model does not retry pip against a sealed sandbox).
std::string EgressSummary(const egress::EgressConfig& config);

EgressInfo DescribeEgress(const egress::EgressConfig& config, const SessionEgress* egress);

}  // namespace sandbox
