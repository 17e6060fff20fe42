// HostBackend: a Backend for the layers above the kernel. Each "sandbox" is sandbox-init run on
// the host over a socketpair (LocalAgent), with its own data and tmp dirs: no namespaces, no
// cgroups, no root, no image, no daemon. Tests inject what a real backend meets only rarely: a
// start that fails, an agent that dies, an OOM kill counted against the sandbox.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/base/result.h"

namespace sandbox::testing {

// What a test can see and change of one started sandbox, also after the manager dropped it.
struct HostSandboxControl {
  SandboxSpec spec;                    // what the manager asked for
  pid_t init_pid = -1;                 // sandbox-init, on the host
  std::string data_dir;                // what the sandbox sees as /mnt/data
  std::atomic<uint64_t> oom_kills{0};  // reported by OomKills()/Usage(): "the limit killed it"
  // Non-zero: each call's memory peak window (StartMemoryPeakWindow) reads this many bytes, as a
  // cgroup's reset high-water mark would; 0: no per-call peak, as where the kernel has none.
  std::atomic<uint64_t> call_peak_bytes{0};
  std::atomic<bool> destroyed{false};  // the manager destroyed the sandbox
  // The CPU priority it was started with, then as the manager last set it.
  std::atomic<CpuPriority> cpu_priority{CpuPriority::kNormal};
  void KillAgent() const;  // SIGKILL to init: the agent stops answering for good
};

class HostBackend : public Backend {
 public:
  std::string name() const override { return "host"; }
  Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec& spec) override;
  EnforcedLimits PlanLimits(const Limits& limits) const override;
  Result<int> SweepOrphans() override { return 0; }

  // The next Start fails with `error` (once).
  void FailNextStart(Error error);
  // How long the agents of sandboxes started from now on give an interrupted run before they
  // kill its worker (SANDBOX_AGENT_GRACE_MS). 200 ms by default, so that tests of the kill wait
  // less; a test that needs the interrupt itself to stop the run gives it seconds, which a
  // loaded host's scheduler may need.
  void SetGraceMs(int grace_ms);
  // Every sandbox started so far, in order.
  std::vector<std::shared_ptr<HostSandboxControl>> started();

 private:
  std::mutex mutex_;
  std::optional<Error> fail_next_;
  int grace_ms_ = 200;
  std::vector<std::shared_ptr<HostSandboxControl>> started_;
};

}  // namespace sandbox::testing
