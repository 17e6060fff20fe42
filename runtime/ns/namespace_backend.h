// NamespaceBackend: sandboxes made of Linux namespaces (user, mount, pid, net, ipc, uts,
// cgroup), a read-only bind of the image rootfs, cgroup/rlimit limits, no capabilities,
// no_new_privs and the seccomp policy — no daemon. DESIGN.md "Isolation baseline" is the spec.
//
// Works for a root server (each sandbox user maps to its own unprivileged host id) and an
// unprivileged one (single-id map onto the server's uid). See spawn.h for how a child is
// started and child_setup.h for its steps.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox {

namespace ns {
struct BackendState;
}

class NamespaceBackend : public Backend {
 public:
  struct Options {
    std::string state_dir;  // records go to state_dir/sessions
    std::string agent_dir;  // default for SandboxSpec::agent_dir
    // Root server: where host id claims live (shared by every server on the host).
    std::string host_id_claim_dir = "/run/mcp-sandbox/host-ids";
    // The longest a child may take from clone to execve before it is killed.
    std::chrono::milliseconds setup_timeout{10000};
    // Use the code paths for kernels before 5.12 (remount with the locked flags instead of
    // mount_setattr, a /proc/self/fd walk instead of close_range): so tests cover them here.
    bool old_kernel_paths = false;
    // Remove the cgroup parent group(s) when the backend goes, if empty by then: for parents
    // of a server's own (a state dir other than the default one), which nobody else reuses.
    bool remove_cgroup_parents = false;
    // SANDBOX_MAX_SESSIONS: an unprivileged server's sandboxes share the user's per-user
    // kernel counters, so each gets a share of them (kernel_counters.h).
    int max_sessions = 10;
  };

  // `cgroups` is CgroupManager::Detect() (or Open()) for this host; null means Detect().
  NamespaceBackend(std::string state_dir, std::string agent_dir,
                   std::unique_ptr<CgroupManager> cgroups);
  NamespaceBackend(Options options, std::unique_ptr<CgroupManager> cgroups);
  ~NamespaceBackend() override;

  std::string name() const override { return "namespace"; }
  EgressTransport egress_transport() const override { return EgressTransport::kChannelFd; }
  // Runs /.sandbox/sandbox-init with the agent protocol on fds 0 and 1.
  Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec& spec) override;
  // The same sandbox running `argv` (argv[0]: an absolute path inside it) instead of the
  // agent, with fds 0 and 1 on the stream: for tests and probes.
  Result<std::unique_ptr<Sandbox>> StartProgram(const SandboxSpec& spec,
                                                std::vector<std::string> argv);
  EnforcedLimits PlanLimits(const Limits& limits) const override;
  // Kills the sandboxes of records whose server is gone (pid + start time must still match),
  // releases their host ids, removes their cgroups and records. Records of live servers, and
  // of this backend's live sandboxes, are kept.
  Result<int> SweepOrphans() override;

  // True when this server maps each sandbox to its own host id (it runs as root).
  bool privileged() const;
  const CgroupManager& cgroups() const;

 private:
  std::shared_ptr<ns::BackendState> state_;
};

// What a namespace sandbox is on the host, for tests and status.
class NamespaceSandbox : public Sandbox {
 public:
  virtual pid_t init_pid() const = 0;  // host pid of the sandbox's pid 1
  virtual uid_t host_uid() const = 0;  // host uid of the sandbox user
  virtual const std::string& session_id() const = 0;
};

}  // namespace sandbox
