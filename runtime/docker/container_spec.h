// The container one sandbox runs in, as plain data, and its POST /containers/create body.
// The hardening lives here so it can be read and unit-tested in one place: no network, every
// capability dropped, read-only rootfs, no-new-privileges, the project's seccomp profile,
// memory (without swap), cpu, pids, ulimits, size-capped tmpfs for /tmp and /mnt/data, uid 1000,
// the agent's init as pid 1, private ipc and cgroup namespaces, and labels for the orphan sweep.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::docker {

// Labels on every container we create; the sweep finds containers by kSessionLabel.
inline constexpr const char* kSessionLabel = "mcp-sandbox.session";
inline constexpr const char* kOwnerLabel = "mcp-sandbox.owner";
inline constexpr const char* kHostLabel = "mcp-sandbox.host";
inline constexpr const char* kReplicaLabel = "mcp-sandbox.replica";  // only with a replica id
inline constexpr const char* kImageLabel = "mcp-sandbox.image";

// Where the host's agent dir is seen inside the sandbox, and the agent's entry point.
inline constexpr const char* kAgentMountPoint = layout::kAgentDir;
inline constexpr const char* kAgentInit = layout::kAgentInit;
inline constexpr const char* kWheelhouseMountPoint = layout::kWheelhouseDir;
inline constexpr const char* kSandboxUser = layout::kSandboxUser;
// Where SandboxSpec::egress_socket_path is bound (read-only: connecting needs no writable
// mount), for sandbox-init to connect to (SANDBOX_AGENT_EGRESS_SOCKET).
inline constexpr const char* kEgressSocketMountPoint = "/run/sandbox-egress.sock";

// The creating server, as the orphan sweep reads it (owner.h): its host and its process.
struct ContainerOwner {
  std::string host;     // mcp-sandbox.host
  std::string process;  // mcp-sandbox.owner
  std::string replica;  // mcp-sandbox.replica ("" = not set)
};

struct BindMount {
  std::string source;  // host path
  std::string target;  // path inside the container
  bool read_only = true;
};

struct ContainerSpec {
  std::string name;                  // "mcp-sandbox-<session id>"
  std::string image;                 // image reference known to the daemon
  std::vector<std::string> command;  // argv of the main process (pid 1 of the container)
  std::vector<std::string> env;      // KEY=VALUE
  std::string working_dir;
  std::string user = kSandboxUser;
  std::string hostname = "sandbox";
  std::map<std::string, std::string> labels;
  std::vector<BindMount> binds;
  Limits limits;
  // HostConfig.CpuShares, from the sandbox's CPU priority (CpuSharesFor).
  int64_t cpu_shares = 0;
  std::string seccomp_profile_json;  // "" = the daemon's default profile
  // HostConfig.Runtime (SANDBOX_DOCKER_RUNTIME): "" = the daemon's default (runc).
  std::string runtime;
};

// The CpuShares a container of `priority` runs with: 1024 (the daemon's default on cgroup v1)
// for both. A background container is capped, not lowered (runtime/cgroup/background_cpu.h:
// a low weight leaves CFS a debt that delays the raised container). Every container says it
// explicitly, so all weigh the same on both cgroup versions (on v2 runc converts shares).
int64_t CpuSharesFor(CpuPriority priority);

// "mcp-sandbox-<session id>".
std::string ContainerNameFor(const std::string& session_id);

// The container for `spec`: the agent dir bound read-only at /.sandbox and run as the command,
// the wheelhouse (if any) read-only at /mnt/wheelhouse, the egress socket (if any) at
// kEgressSocketMountPoint. Fails with kInvalidArgument on a
// session id that cannot name a container or on relative host paths.
Result<ContainerSpec> ContainerSpecFor(const SandboxSpec& spec, const std::string& image,
                                       const ContainerOwner& owner,
                                       const std::string& seccomp_profile_json);

// The JSON body of POST /containers/create for `spec`.
nlohmann::json CreateContainerBody(const ContainerSpec& spec);

}  // namespace sandbox::docker
