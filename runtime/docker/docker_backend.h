// DockerBackend: sandboxes as hardened Docker containers, driven through the Engine API on a
// unix socket (DESIGN.md "Docker fallback"). Each sandbox is one container running the same
// agent as the namespace backend, bound read-only at /.sandbox, connected over a hijacked
// attach stream. Kill = POST /kill; destruction = DELETE ?force=1. Containers carry labels
// naming their session and owning server, so a restarted server sweeps what a crashed one left.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "runtime/backend.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/engine_client.h"
#include "runtime/docker/owner.h"
#include "runtime/docker/removal_backlog.h"

namespace sandbox::docker {

struct DockerBackendOptions {
  std::string socket_path;  // "" = from DOCKER_HOST (unix:// only), else /var/run/docker.sock
  std::string owner;        // "" = this process (see owner.h)
  std::string host;         // "" = this host (see owner.h)
  // The seccomp profile (Docker's JSON format). Unset = the project's policy
  // (seccomp::DockerProfileJson) when the seccomp library is built; "" = the daemon's default.
  std::optional<std::string> seccomp_profile_json;
  // Read usage through the Engine API (stats, oom events) even when the container's cgroup is
  // visible on this host. Slower (about 1 s per Usage call); for tests and remote daemons.
  bool usage_from_engine_api = false;
  // SANDBOX_REPLICA_ID: labelled on every container; the sweep takes this replica's earlier
  // runs' containers (owner.h).
  std::string replica;
  // SANDBOX_DOCKER_RUNTIME: the daemon-registered OCI runtime every container runs with
  // (HostConfig.Runtime), e.g. "runsc"; "" = the daemon's default.
  std::string runtime;
};

class DockerBackend : public Backend {
 public:
  // Connects to the daemon and negotiates the API version. Fails with kSandboxUnavailable,
  // saying why, when no usable daemon answers (for doctor and the automatic backend choice).
  static Result<std::unique_ptr<DockerBackend>> Connect(DockerBackendOptions options = {});

  ~DockerBackend() override;

  std::string name() const override { return "docker"; }
  // The daemon cannot take a file descriptor into a container: the egress socket is bound in.
  EgressTransport egress_transport() const override { return EgressTransport::kSocketPath; }
  // Ensures the image (loading spec.docker.archive, or the archive spec.docker.source
  // makes, if the daemon lacks it), creates the container, attaches, starts. A failure after
  // create removes the container again.
  Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec& spec) override;
  EnforcedLimits PlanLimits(const Limits& limits) const override;
  // Removes every container labelled mcp-sandbox.session whose owning server ran on this host
  // and is provably gone (owner.h); containers of other hosts sharing the daemon stay, and
  // each is logged once per backend.
  Result<int> SweepOrphans() override;

  // Makes `image` known to the daemon: nothing when present, else POST /images/load of
  // `archive` (kNotFound when there is no archive). Serialized: concurrent starts load once.
  Status EnsureImage(const std::string& image, const std::string& archive);
  // The same, and when there is no archive asks `provider` (if any) for one: the image id it
  // names is used as is when the daemon has it, else its archive is loaded. Returns the
  // reference to create the container from (`image`, or the provider's image id).
  Result<std::string> EnsureImage(const std::string& image, const std::string& archive,
                                  const DockerImageProvider& provider);

  const EngineClient& engine() const { return *engine_; }
  const std::string& owner() const { return owner_.process; }
  const std::string& host() const { return owner_.host; }
  const std::string& seccomp_profile_json() const { return seccomp_profile_json_; }

 private:
  DockerBackend(std::unique_ptr<EngineClient> engine, DockerBackendOptions options);
  // Frees a session container's name that a container still holds: one of this server's
  // (its last sandbox of the session, still being removed) or of a server that is gone (an
  // earlier run whose start-up sweep raced the removal); one of a live other server is refused,
  // so a session is never live twice. Waits until the name is free.
  Status ClearName(const std::string& name);

  std::shared_ptr<EngineClient> engine_;
  // Shared with the sandboxes, whose removal may fail after the backend's last start.
  std::shared_ptr<RemovalBacklog> backlog_ = std::make_shared<RemovalBacklog>();
  ContainerOwner owner_;
  LocalIdentity local_;
  std::string seccomp_profile_json_;
  bool usage_from_engine_api_;
  std::string runtime_;  // HostConfig.Runtime of every container ("" = the daemon's default)
  std::mutex image_mutex_;
  std::mutex sweep_mutex_;
  std::set<std::string> left_alone_;  // container ids already logged as not ours to judge
};

}  // namespace sandbox::docker
