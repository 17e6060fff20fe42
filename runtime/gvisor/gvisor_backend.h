// GvisorBackend: each sandbox is a gVisor sandbox (`runsc run`): the session's code talks to the
// Sentry, a kernel in user space, instead of the host's; the Sentry and its file proxy (the
// Gofer) run under runsc's own seccomp filters. The sandbox is built from the same image rootfs,
// agent and layout as the namespace backend's, so the agent protocol is unchanged: sandbox-init
// talks over a socket pair that runsc hands the container as its stdin and stdout.
//
// As root the sandbox's host processes (runsc, Sentry, Gofer) run in a cgroup of the project's
// own (CgroupManager) for memory, CPU and a pids cap; not root, runsc runs --rootless and only the
// Sentry-enforced rlimits hold. `runsc run` is started from a reaper of the backend's own (a
// child subreaper outside that cgroup) that reaps what runsc daemonizes, so a close never waits
// for pid 1. Never chosen by SANDBOX_BACKEND=auto. docs/security.md "gVisor".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::gvisor {

struct BackendState;

struct GvisorOptions {
  std::string state_dir;            // bundles and runsc's state go to state_dir/gvisor
  std::string agent_dir;            // default for SandboxSpec::agent_dir
  std::string runsc = "runsc";      // SANDBOX_RUNSC
  std::string platform = "ptrace";  // SANDBOX_GVISOR_PLATFORM
};

// What the host offers a gVisor backend: runsc found, its version, the platform usable.
struct RunscCheck {
  bool ok = false;
  std::string runsc_path;
  std::string version;  // `runsc --version`'s first line
  std::string detail;   // what works, or why not
};
RunscCheck CheckRunsc(const std::string& runsc, const std::string& platform);

class GvisorBackend : public Backend {
 public:
  // Fails (kSandboxUnavailable) when CheckRunsc does. `cgroups` null means Detect() under this
  // state dir's own gVisor parent group.
  static Result<std::unique_ptr<GvisorBackend>> Open(GvisorOptions options,
                                                     std::unique_ptr<CgroupManager> cgroups = {});
  ~GvisorBackend() override;

  std::string name() const override { return "gvisor"; }
  // The channel is passed to a bridge on the host (egress_bridge.h), which sandbox-init reaches
  // through a host socket bound into the sandbox.
  EgressTransport egress_transport() const override { return EgressTransport::kChannelFd; }
  Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec& spec) override;
  // The same sandbox running `argv` instead of the agent, with stdin and stdout on the stream:
  // for tests.
  Result<std::unique_ptr<Sandbox>> StartProgram(const SandboxSpec& spec,
                                                std::vector<std::string> argv);
  EnforcedLimits PlanLimits(const Limits& limits) const override;
  // Deletes the runsc containers, bundles and cgroups of servers that are gone.
  Result<int> SweepOrphans() override;

  const RunscCheck& runsc() const;
  bool rootless() const;

 private:
  explicit GvisorBackend(std::shared_ptr<BackendState> state);
  std::shared_ptr<BackendState> state_;
};

// The cgroup parent of a gVisor server on `state_dir`: its own, so the sweeps of a namespace
// server on the same state dir and of this one never take each other's groups.
std::string GvisorCgroupOwner(const std::string& state_dir);

// Rewrites a cgroup plan (CgroupManager::Plan) into what a gVisor sandbox gets: the pids limit is
// the Sentry's RLIMIT_NPROC, a memory cgroup kills the whole sandbox. For PlanLimits and doctor.
void DescribeGvisorLimits(const Limits& limits, EnforcedLimits& plan);

// The host pids cap of a sandbox whose guest may have `guest_pids` tasks: the cgroup counts the
// Sentry's and Gofer's threads and the platform's stub processes, not guest tasks (those are
// capped by the Sentry's RLIMIT_NPROC), and a Sentry short of threads aborts.
uint32_t HostPidsFor(uint32_t guest_pids);

}  // namespace sandbox::gvisor
