// What a sandbox's network is, said from the egress policy and nothing else, for every surface
// that says it: the sentence in the run tools' descriptions and in the server's instructions,
// MCP's openWorldHint, the "egress" object of sandbox_session_status, sandbox_create_session,
// `run --json` and `doctor --json`, and the "egress:" line of status and doctor. One home, so no
// surface can say "no network" while SANDBOX_EGRESS_ALLOW is set, or the other way round.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/egress/egress_config.h"
#include "runtime/egress/egress_proxy.h"

namespace sandbox::egress {

// The policy in force for a sandbox (or the one a new session gets), and what it carried.
struct EgressInfo {
  bool enabled = false;
  std::vector<std::string> allow;  // canonical entries; empty when disabled
  std::string index_url;           // "" = none / pip's default
  uint64_t max_bytes = 0;
  EgressUsage usage;
};

// What a new session gets from `policy` (enabled exactly when the allowlist is not empty).
EgressInfo DescribePolicy(const EgressConfig& policy);

// {"enabled"} when off; {"enabled", "allow", "index_url", "max_bytes"} when on, plus
// {"bytes", "connections", "refused", "open", "byte_limit_reached"} with `with_usage` (a
// session's report; a policy alone carried nothing).
nlohmann::json EgressJson(const EgressInfo& info, bool with_usage);

// "none (no network)", or the allowed hosts and the index, plus what was carried with
// `with_usage`: the text after "egress: ".
std::string EgressLine(const EgressInfo& info, bool with_usage);

// One sentence for descriptions and instructions: which hosts sandboxes may reach and how, or
// that there is no network (so a model does not retry pip against a sealed sandbox).
std::string EgressSentence(const EgressConfig& policy);

}  // namespace sandbox::egress
