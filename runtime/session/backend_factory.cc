#include "runtime/session/backend_factory.h"

#include <spdlog/spdlog.h>

#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/docker/daemon_runtime.h"
#include "runtime/docker/docker_backend.h"
#include "runtime/gvisor/guest_seccomp.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/ns/namespace_backend.h"
#include "runtime/probe/host_probe.h"
#include "runtime/probe/probe_cache.h"

namespace sandbox {

namespace {
const char* KindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kAuto:
      return "auto";
    case BackendKind::kNamespace:
      return "namespace";
    case BackendKind::kDocker:
      return "docker";
    case BackendKind::kGvisor:
      return "gvisor";
  }
  return "auto";
}
}  // namespace

Result<BackendKind> ParseBackendKind(const std::string& text) {
  if (text == "auto" || text.empty()) return BackendKind::kAuto;
  if (text == "namespace") return BackendKind::kNamespace;
  if (text == "docker") return BackendKind::kDocker;
  if (text == "gvisor") return BackendKind::kGvisor;
  return Fail(ErrorCode::kInvalidArgument,
              "SANDBOX_BACKEND '{}' is not one of auto, namespace, docker, gvisor", text);
}

Result<SelectedBackend> MakeBackend(const BackendOptions& options) {
  if (options.kind == BackendKind::kGvisor) {
    // Asked for by name only: it needs neither the namespace probes nor Docker.
    auto backend = gvisor::GvisorBackend::Open({.state_dir = options.state_dir,
                                                .agent_dir = options.agent_dir,
                                                .runsc = options.runsc,
                                                .platform = options.gvisor_platform});
    if (!backend) return Fail(std::move(backend.error()).Context("SANDBOX_BACKEND=gvisor"));
    std::string reason = "SANDBOX_BACKEND=gvisor; " + (*backend)->runsc().detail;
    spdlog::info("backend: gvisor ({})", reason);
    return SelectedBackend{std::shared_ptr<Backend>(std::move(*backend)), reason};
  }
  // Probe only what the choice needs: the namespace probes fork a child each (a few ms), the
  // Docker probe talks to the socket.
  probe::UsernsProbe userns;
  probe::SeccompProbe seccomp;
  probe::DockerProbe docker;
  bool cached = false;
  const std::string key = options.probe_cache.empty() ? "" : probe::HostProbeKey();
  if (options.kind != BackendKind::kDocker) {
    cached = !key.empty() && probe::CachedNamespacesOk(options.probe_cache, key);
    if (cached) {
      userns.ok = seccomp.ok = true;
      userns.detail = seccomp.detail =
          "passed when last probed on this host (" + options.probe_cache + ")";
    } else {
      userns = probe::ProbeUserNamespaces();
      seccomp = probe::ProbeSeccomp();
      if (!key.empty() && userns.ok && seccomp.ok) {
        probe::RememberNamespacesOk(options.probe_cache, key);
      }
    }
  }
  bool namespaces_ok = userns.ok && seccomp.ok;
  if (options.kind == BackendKind::kDocker ||
      (options.kind == BackendKind::kAuto && !namespaces_ok)) {
    docker = probe::ProbeDocker();
  }
  auto choice = probe::ChooseBackend(userns, seccomp, docker, KindName(options.kind));
  if (choice.backend == "namespace") {
    NamespaceBackend::Options ns_options;
    ns_options.state_dir = options.state_dir;
    ns_options.agent_dir = options.agent_dir;
    ns_options.max_sessions = options.max_sessions;
    const std::string owner = CgroupOwnerFor(options.state_dir);
    ns_options.remove_cgroup_parents = owner != kDefaultCgroupOwner;
    auto backend =
        std::make_shared<NamespaceBackend>(std::move(ns_options), CgroupManager::Detect(owner));
    spdlog::info("backend: namespace ({}; limits via {})", choice.reason,
                 backend->cgroups().mode());
    return SelectedBackend{std::move(backend), choice.reason, cached};
  }
  if (choice.backend == "docker") {
    docker::DockerBackendOptions docker_options;
    docker_options.replica = options.replica;
    docker_options.runtime = options.docker_runtime;
    if (docker::IsRunscRuntime(options.docker_runtime)) {
      // runsc (registered with --oci-seccomp, docs/docker.md) has the Sentry enforce the
      // profile, answering every refusal EPERM: the gVisor backend's form of the policy, whose
      // clone3 stays the Sentry's ENOSYS so that glibc falls back to clone for threads.
      docker_options.seccomp_profile_json = gvisor::GuestSeccomp().dump();
    }
    auto backend = docker::DockerBackend::Connect(std::move(docker_options));
    if (!backend) return Fail(std::move(backend.error()).Context("Docker backend"));
    spdlog::info("backend: docker ({})", choice.reason);
    return SelectedBackend{std::shared_ptr<Backend>(std::move(*backend)), choice.reason};
  }
  return Fail(ErrorCode::kSandboxUnavailable, "no sandbox backend can run here: {}", choice.reason);
}

}  // namespace sandbox
