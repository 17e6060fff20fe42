#include "tests/support/host_backend.h"

#include <signal.h>

#include "runtime/base/files.h"
#include "tests/support/local_agent.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {
namespace {

class HostSandbox : public Sandbox {
 public:
  HostSandbox(std::unique_ptr<TempDir> dir, std::unique_ptr<LocalAgent> agent,
              std::shared_ptr<HostSandboxControl> control)
      : dir_(std::move(dir)), agent_(std::move(agent)), control_(std::move(control)) {
    enforced_.cgroup_mode = "none";
  }
  ~HostSandbox() override {
    agent_.reset();  // shuts init down (or kills it) before its dirs go
    control_->destroyed = true;
  }
  ByteStream& stream() override { return agent_->stream(); }
  Status Kill() override {
    control_->KillAgent();
    return {};
  }
  SandboxUsage Usage() override {
    SandboxUsage usage;
    usage.oom_kills = control_->oom_kills;
    return usage;
  }
  std::function<std::optional<uint64_t>()> StartMemoryPeakWindow() override {
    if (control_->call_peak_bytes == 0) return {};
    return [control = control_]() -> std::optional<uint64_t> {
      return control->call_peak_bytes.load();
    };
  }
  Status SetCpuPriority(CpuPriority priority) override {
    control_->cpu_priority = priority;
    return {};
  }
  const EnforcedLimits& enforced_limits() const override { return enforced_; }
  std::string backend_name() const override { return "host"; }

 private:
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<LocalAgent> agent_;
  std::shared_ptr<HostSandboxControl> control_;
  EnforcedLimits enforced_;
};

}  // namespace

void HostSandboxControl::KillAgent() const {
  if (init_pid > 0) ::kill(init_pid, SIGKILL);
}

Result<std::unique_ptr<Sandbox>> HostBackend::Start(const SandboxSpec& spec) {
  int grace_ms = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    grace_ms = grace_ms_;
    if (fail_next_) {
      Error error = std::move(*fail_next_);
      fail_next_.reset();
      return Fail(std::move(error));
    }
    // As the real backends: one sandbox per session id at a time (the namespace backend refuses
    // a second, Docker's container name is taken), so a manager that starts a session's next
    // sandbox before its last one is gone fails here as it would there.
    for (const auto& earlier : started_) {
      if (!spec.session_id.empty() && earlier->spec.session_id == spec.session_id &&
          !earlier->destroyed) {
        return Fail(ErrorCode::kInvalidSessionId, "session {} already has a sandbox",
                    spec.session_id);
      }
    }
  }
  auto dir = std::make_unique<TempDir>();
  auto control = std::make_shared<HostSandboxControl>();
  control->spec = spec;
  control->cpu_priority = spec.cpu_priority;
  control->data_dir = dir->Join("data");
  SBX_TRY(MakeDirs(control->data_dir, 0755));
  SBX_TRY(MakeDirs(dir->Join("tmp"), 0755));
  LocalAgentOptions options;
  options.data_dir = control->data_dir;
  options.tmp_dir = dir->Join("tmp");
  options.grace_ms = grace_ms;
  options.sandbox_paths = true;  // the tools use /mnt/data and /tmp, as in a real sandbox
  // What the manager tells init through the environment (the preload, say); the image's own
  // variables stay out: there is no image.
  for (const auto& entry : spec.env) {
    if (entry.starts_with("SANDBOX_AGENT_")) options.env.push_back(entry);
  }
  SBX_ASSIGN_OR_RETURN(auto agent, LocalAgent::Spawn(options));
  control->init_pid = agent->pid();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    started_.push_back(control);
  }
  return std::unique_ptr<Sandbox>(new HostSandbox(std::move(dir), std::move(agent), control));
}

EnforcedLimits HostBackend::PlanLimits(const Limits&) const {
  EnforcedLimits plan;
  plan.cgroup_mode = "none";
  return plan;
}

void HostBackend::SetGraceMs(int grace_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  grace_ms_ = grace_ms;
}

void HostBackend::FailNextStart(Error error) {
  std::lock_guard<std::mutex> lock(mutex_);
  fail_next_ = std::move(error);
}

std::vector<std::shared_ptr<HostSandboxControl>> HostBackend::started() {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

}  // namespace sandbox::testing
