// The limits a Docker container gets, as reported to doctor and session status: planned from
// what the daemon says the kernel supports (/info), then corrected from what the daemon
// actually set on the container (inspect HostConfig), so a limit the daemon dropped with a
// warning (e.g. swap without swap accounting) is reported as not enforced. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/docker/engine_client.h"
#include "runtime/limits.h"

namespace sandbox::docker {

EnforcedLimits PlanDockerLimits(const Limits& limits, const DaemonInfo& daemon);

// `planned` corrected by the container's inspected HostConfig.
EnforcedLimits CorrectFromHostConfig(EnforcedLimits planned, const nlohmann::json& host_config);

}  // namespace sandbox::docker
