// SANDBOX_DOCKER_RUNTIME: the OCI runtime the daemon runs sandbox containers with (HostConfig.
// Runtime), e.g. runsc for gVisor's kernel as a second wall. The daemon must have it registered
// (dockerd --add-runtime or daemon.json "runtimes"); these say so clearly when it has not, for
// the tools (a create that fails) and for doctor.
#pragma once

#include <string>

#include "runtime/base/result.h"
#include "runtime/docker/engine_client.h"

namespace sandbox::docker {

// True for a runtime named runsc (runsc, runsc-systrap, ...): gVisor's Sentry runs inside the
// container's cgroup, so the container spec leaves it room and limits the guest by rlimits.
bool IsRunscRuntime(const std::string& runtime);

// Ok when `runtime` is "" (the daemon's default) or registered with the daemon `info` describes;
// else kSandboxUnavailable naming the runtimes it has and how to register the missing one.
Status RequireRuntime(const DaemonInfo& info, const std::string& runtime);

// The create call's failure, when it failed for `runtime`, as RequireRuntime's message with the
// daemon's own words ("Unknown runtime specified runsc") kept; any other error as it is.
Error ExplainCreateError(Error error, const std::string& runtime);

// One line for doctor: "runsc (registered: /usr/bin/runsc)", "the daemon's default (runc)", or
// RequireRuntime's message.
std::string DescribeRuntime(const DaemonInfo& info, const std::string& runtime);

}  // namespace sandbox::docker
