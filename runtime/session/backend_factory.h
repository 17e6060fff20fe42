// Chooses and builds the Backend `serve` and `run` use:
// SANDBOX_BACKEND=auto|namespace|docker|gvisor (gvisor only when asked for by name).
// auto probes namespaces for real (fork, unshare a user namespace, write uid_map, mount a tmpfs)
// and falls back to Docker when that fails, saying why.
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/cgroup/cgroup_limits.h"  // CgroupOwnerFor

namespace sandbox {

enum class BackendKind { kAuto, kNamespace, kDocker, kGvisor };

// Parses "auto" | "namespace" | "docker" | "gvisor".
Result<BackendKind> ParseBackendKind(const std::string& text);

struct SelectedBackend {
  std::shared_ptr<Backend> backend;
  std::string reason;             // one sentence: why this backend (for logs and doctor)
  bool from_probe_cache = false;  // chosen on a kept verdict, not a probe made now
};

struct BackendOptions {
  BackendKind kind = BackendKind::kAuto;
  std::string state_dir;
  std::string agent_dir;
  // SANDBOX_MAX_SESSIONS: an unprivileged namespace server shares the user's kernel counters
  // among this many sandboxes.
  int max_sessions = 10;
  std::string replica;  // SANDBOX_REPLICA_ID (the Docker backend labels and sweeps by it)
  // A file keeping the namespace probes' pass (runtime/probe/probe_cache.h), for one-shot
  // runs; "" probes every time, as a server does once at its start.
  std::string probe_cache;
  std::string runsc = "runsc";             // SANDBOX_RUNSC (gvisor)
  std::string gvisor_platform = "ptrace";  // SANDBOX_GVISOR_PLATFORM (gvisor)
  std::string docker_runtime;              // SANDBOX_DOCKER_RUNTIME (docker; "" = its default)
};

// Fails with kSandboxUnavailable, naming every reason, when no backend can be used.
Result<SelectedBackend> MakeBackend(const BackendOptions& options);

}  // namespace sandbox
