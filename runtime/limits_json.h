// The limits in force, as every surface reports them (`sandbox_session_status`,
// `sandbox_create_session`, `mcp-sandbox run --json`, `doctor --json`): one shape, so a client
// that reads one reads them all.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/limits.h"

namespace sandbox {

// {"cgroup_mode": "cgroup2"|"cgroup1"|"none"|"docker",
//  "limits": [{"name", "mechanism", "value", "note"}...]}
nlohmann::json EnforcedLimitsJson(const EnforcedLimits& enforced);

}  // namespace sandbox
