#include "runtime/ns/namespace_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "runtime/agent/agent_env.h"
#include "runtime/agent/host/fd_byte_stream.h"
#include "runtime/base/fd_ops.h"
#include "runtime/ns/child_setup.h"
#include "runtime/ns/kernel_counters.h"
#include "runtime/ns/mounts.h"
#include "runtime/ns/pidfd.h"
#include "runtime/ns/process_identity.h"
#include "runtime/ns/process_usage.h"
#include "runtime/ns/session_record.h"
#include "runtime/ns/spawn.h"
#include "runtime/ns/userns.h"
#include "runtime/sandbox_layout.h"
#include "seccomp/policy.h"

namespace sandbox {
namespace ns {

constexpr const char* kInitPath = "/.sandbox/sandbox-init";
constexpr auto kReapTimeout = std::chrono::seconds(5);
// How long Kill() waits for a killed init before it kills through the cgroup (which waits as
// long again for the group to empty).
constexpr auto kKillWait = std::chrono::seconds(2);

// Everything sandboxes share with their backend. Sandboxes hold it by shared_ptr, so the
// spawner thread (the parent of record of every child) outlives every sandbox.
struct BackendState {
  NamespaceBackend::Options options;
  std::unique_ptr<CgroupManager> cgroups;
  SessionRecords records;
  std::optional<HostIdAllocator> host_ids;  // root server only
  KernelCounters counter_caps;              // per sandbox (kernel_counters.h)
  ProcessIdentity self;
  Spawner spawner;

  std::mutex mutex;
  std::set<std::string> live;  // session ids of this backend's sandboxes

  BackendState(NamespaceBackend::Options opts, std::unique_ptr<CgroupManager> manager)
      : options(std::move(opts)),
        cgroups(manager ? std::move(manager) : CgroupManager::Detect()),
        records(options.state_dir + "/sessions") {
    if (::geteuid() == 0) host_ids.emplace(options.host_id_claim_dir);
    counter_caps = SandboxCaps(HostPerUserBudget(), host_ids.has_value(), options.max_sessions);
    if (auto me = IdentifyProcess(::getpid())) self = *me;
  }
  ~BackendState() {
    // Every sandbox (each holds this state) is gone, and with it its group: an rmdir of a
    // parent still in use fails harmlessly (EBUSY).
    if (!options.remove_cgroup_parents) return;
    for (const std::string& dir : cgroups->parent_dirs()) ::rmdir(dir.c_str());
  }
};

namespace {

bool IsSafeSessionId(const std::string& id) {
  if (id.empty() || id.size() > layout::kMaxSessionIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// Waits up to `timeout` for the process behind `pidfd` to exit, then reaps it if it is our
// child. Returns false if it is still running.
bool WaitForExit(int pidfd, std::chrono::milliseconds timeout, bool reap) {
  struct pollfd pfd = {pidfd, POLLIN, 0};
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int n = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n > 0) break;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
  if (reap) {
    siginfo_t info = {};
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) !=
               0 &&
           errno == EINTR) {
    }
  }
  return true;
}

class Sandbox final : public NamespaceSandbox {
 public:
  Sandbox(std::shared_ptr<BackendState> state, std::string session_id)
      : state_(std::move(state)), session_id_(std::move(session_id)) {}

  ~Sandbox() override {
    (void)Kill();
    bool gone = true;
    if (child_.pidfd) {
      gone = WaitForExit(child_.pidfd.get(), kReapTimeout, /*reap=*/true);
      if (!gone) {
        spdlog::error(
            "sandbox {}: pid {} did not exit {}s after SIGKILL; its record stays for "
            "the orphan sweep",
            session_id_, child_.pid, kReapTimeout.count());
      }
    }
    if (cgroup_) {
      if (auto destroyed = cgroup_->Destroy(); !destroyed) {
        spdlog::warn("sandbox {}: {}", session_id_, destroyed.error().message);
        gone = false;
      }
    }
    if (gone) {
      if (record_written_) state_->records.Remove(session_id_);
      if (host_uid_claimed_) state_->host_ids->Release(host_uid_);
    }
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->live.erase(session_id_);
  }

  ByteStream& stream() override { return *stream_; }

  Status Kill() override {
    // SIGKILL to the pid namespace's init: the kernel then kills every process in it and lets
    // none of them fork again, and every process of the sandbox is in it (nothing enters the
    // namespace from outside). Init exits only once every other process of its namespace is
    // gone, so its exit is the end of the sandbox's processes, as the cgroup's kill waits for
    // the group to empty. That kill is the fallback (no init to signal, or one that did not
    // exit): on cgroup v1 it freezes the group to be safe from forks, and a freeze and a thaw
    // flip a kernel static key each, patching the kernel's code on every CPU (a one-shot run
    // froze its group three times: 0.4 ms of CPU). Init is reaped by the destructor.
    if (child_.pidfd) {
      if (ns::PidfdSendSignal(child_.pidfd.get(), SIGKILL) != 0 && errno != ESRCH) {
        auto error = SysError("pidfd_send_signal", std::to_string(child_.pid));
        if (!cgroup_ || !cgroup_->KillAll()) return Fail(std::move(error));
        return {};
      }
      if (WaitForExit(child_.pidfd.get(), kKillWait, /*reap=*/false)) return {};
    }
    if (cgroup_) {
      if (auto killed = cgroup_->KillAll(); !killed) {
        spdlog::warn("sandbox {}: {}", session_id_, killed.error().message);
      }
    }
    return {};
  }

  SandboxUsage Usage() override {
    if (cgroup_ && state_->cgroups->mode() != "none") return cgroup_->Usage();
    return child_.pidfd ? ProcessTreeUsage(child_.pid) : SandboxUsage{};
  }

  std::function<std::optional<uint64_t>()> StartMemoryPeakWindow() override {
    if (!cgroup_ || state_->cgroups->mode() == "none") return {};
    auto reader = cgroup_->StartMemoryPeakWindow();
    if (!reader) return {};
    return std::move(*reader);
  }

  double CpuSeconds() override {
    if (cgroup_ && state_->cgroups->mode() != "none") return cgroup_->CpuSeconds();
    return child_.pidfd ? ProcessTreeUsage(child_.pid).cpu_seconds : 0;
  }

  uint64_t OomKills() override {
    if (cgroup_ && state_->cgroups->mode() != "none") return cgroup_->OomKills();
    return 0;  // without a memory cgroup nothing is killed for memory (rlimits make it fail)
  }

  Status SetCpuPriority(CpuPriority priority) override {
    return cgroup_ ? cgroup_->SetCpuPriority(priority) : Status{};
  }

  const EnforcedLimits& enforced_limits() const override { return limits_; }
  std::string backend_name() const override { return "namespace"; }
  pid_t init_pid() const override { return child_.pid; }
  uid_t host_uid() const override { return host_uid_; }
  const std::string& session_id() const override { return session_id_; }

  // Start fills these in as it goes; whatever is set is undone by the destructor.
  std::shared_ptr<BackendState> state_;
  std::string session_id_;
  std::unique_ptr<SandboxCgroup> cgroup_;
  uid_t host_uid_ = 0;
  bool host_uid_claimed_ = false;
  SpawnedChild child_;
  bool record_written_ = false;
  std::unique_ptr<ByteStream> stream_;
  EnforcedLimits limits_;
};

bool MemoryCgroupInForce(const EnforcedLimits& plan) {
  return std::any_of(plan.limits.begin(), plan.limits.end(), [](const EnforcedLimit& limit) {
    return limit.name == "memory" && (limit.mechanism == LimitMechanism::kCgroup2 ||
                                      limit.mechanism == LimitMechanism::kCgroup1);
  });
}

// A symlink (or file) where the plan mounts something would redirect the mount.
Status CheckMountPoints(const MountInputs& inputs) {
  for (const std::string& point : RequiredMountPoints(inputs)) {
    std::string path = inputs.rootfs + "/" + point;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;  // missing: the child's step reports it
    if (!S_ISDIR(st.st_mode)) {
      return Fail(ErrorCode::kSandboxUnavailable, "rootfs {}: /{} is not a directory",
                  inputs.rootfs, point);
    }
  }
  return {};
}

Result<std::unique_ptr<Sandbox>> StartSandbox(const std::shared_ptr<BackendState>& state,
                                              const SandboxSpec& spec,
                                              std::vector<std::string> argv) {
  const auto started = Clock::now();
  if (!IsSafeSessionId(spec.session_id)) {
    return Fail(ErrorCode::kInvalidSessionId, "bad session id '{}'", spec.session_id);
  }
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return Fail(ErrorCode::kInvalidArgument, "the sandbox program must be an absolute path");
  }
  SBX_ASSIGN_OR_RETURN(const seccomp::BpfProgram* policy, seccomp::CompiledPolicy());

  MountInputs inputs;
  inputs.rootfs = spec.rootfs;
  inputs.agent_dir = spec.agent_dir.empty() ? state->options.agent_dir : spec.agent_dir;
  inputs.wheelhouse = spec.wheelhouse;
  inputs.tmp_bytes = spec.limits.tmp_bytes;
  inputs.data_bytes = spec.limits.disk_bytes;
  inputs.sysctls = SandboxSysctls(state->counter_caps);
  for (const std::string* dir : {&inputs.rootfs, &inputs.agent_dir}) {
    struct stat st;
    if (dir->empty() || (*dir)[0] != '/') {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "rootfs and agent dir must be absolute paths "
                  "(got '{}')",
                  *dir);
    }
    if (::stat(dir->c_str(), &st) != 0) return FailSys("stat", *dir);
    if (!S_ISDIR(st.st_mode))
      return Fail(ErrorCode::kSandboxUnavailable, "{}: not a directory", *dir);
  }
  SBX_TRY(CheckMountPoints(inputs));

  {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->live.insert(spec.session_id).second) {
      return Fail(ErrorCode::kInvalidSessionId, "session {} already has a sandbox",
                  spec.session_id);
    }
  }
  // Made only once the id is ours: its destructor gives the id back (a refused duplicate must
  // not take the live sandbox's id out of the set the orphan sweep keeps).
  auto sandbox = std::make_unique<Sandbox>(state, spec.session_id);
  sandbox->limits_ = state->cgroups->Plan(spec.limits);
  DescribeCaps(state->counter_caps, state->host_ids.has_value(), sandbox->limits_);

  ChildPlan plan;
  plan.unshare_flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  plan.mounts = BuildMountPlan(inputs);
  if (state->options.old_kernel_paths) {
    plan.mounts.use_mount_setattr = false;
    plan.use_close_range = false;
  }
  plan.workdir = spec.workdir.empty() ? layout::kDataDir : spec.workdir;
  plan.rlimits = RlimitsFor(spec.limits, MemoryCgroupInForce(sandbox->limits_));
  for (const RlimitSetting& limit : SandboxCounterRlimits(state->counter_caps)) {
    plan.rlimits.push_back(limit);
  }
  plan.seccomp = policy->prog();
  plan.exec_path = argv[0];
  plan.argv = std::move(argv);
  plan.env = spec.env;
  if (spec.egress_channel_fd >= 0) plan.env.push_back(std::string(agent_env::kEgressFd) + "=3");
  plan.Finalize();

  IdMapping mapping;
  if (state->host_ids) {
    SBX_ASSIGN_OR_RETURN(uint32_t host_id, state->host_ids->Claim(spec.session_id));
    sandbox->host_uid_ = host_id;
    sandbox->host_uid_claimed_ = true;
    mapping.host_uid = host_id;
    mapping.host_gid = host_id;
    mapping.deny_setgroups = false;
    plan.drop_supplementary_groups = true;
  } else {
    sandbox->host_uid_ = ::geteuid();
    mapping.host_uid = ::geteuid();
    mapping.host_gid = ::getegid();
    mapping.deny_setgroups = true;
  }

  // A first record, before anything that outlives a crash exists: another server on this state
  // dir that starts now and sweeps orphans must see this sandbox as a live server's, or it
  // removes its cgroup while the spawn below is under way. The init fields follow the spawn.
  SessionRecord record;
  record.session_id = spec.session_id;
  record.server = state->self;
  record.host_uid = sandbox->host_uid_;
  record.host_uid_claimed = sandbox->host_uid_claimed_;
  record.rootfs = spec.rootfs;
  if (auto written = state->records.Write(record); !written) {
    return Fail(std::move(written.error()).Context("write the session record"));
  }
  sandbox->record_written_ = true;

  SBX_ASSIGN_OR_RETURN(sandbox->cgroup_, state->cgroups->Create(spec.session_id, spec.limits));
  if (spec.cpu_priority != CpuPriority::kNormal) {
    SBX_TRY(sandbox->cgroup_->SetCpuPriority(spec.cpu_priority));  // before the first process
  }

  Fd sync_parent, sync_child, stream_parent, stream_child, log_read, log_write;
  SBX_TRY(MakeSocketPair(SOCK_SEQPACKET, sync_parent, sync_child, "sync"));
  SBX_TRY(MakeSocketPair(SOCK_STREAM, stream_parent, stream_child, "agent stream"));
  SBX_TRY(MakePipe(log_read, log_write));
  plan.sync_fd = sync_child.get();
  plan.stream_fd = stream_child.get();
  plan.log_fd = log_write.get();
  std::vector<Fd> child_fds;
  child_fds.push_back(std::move(sync_child));
  child_fds.push_back(std::move(stream_child));
  child_fds.push_back(std::move(log_write));
  if (spec.egress_channel_fd >= 0) {
    // The sandbox's end of the egress channel becomes init's fd 3 (egress_relay.h).
    int channel = ::fcntl(spec.egress_channel_fd, F_DUPFD_CLOEXEC, 3);
    if (channel < 0) return FailSys("fcntl", "egress channel");
    child_fds.emplace_back(channel);
    plan.channel_fd = channel;
  }

  // cgroup v1: the child joins by itself (cgroup_limits.h says why); the parent's copies are
  // closed after the clone, with the child's other ends.
  SBX_ASSIGN_OR_RETURN(std::vector<Fd> join_files, sandbox->cgroup_->OpenSelfJoinFiles());
  const bool self_join = !join_files.empty();
  for (Fd& file : join_files) {
    plan.cgroup_join_fds.push_back(file.get());
    child_fds.push_back(std::move(file));
  }

  const auto planned = Clock::now();
  // Root server: the sandbox's own host uid owns its user namespace (spawn.cc says why).
  const uid_t owner = state->host_ids ? sandbox->host_uid_ : static_cast<uid_t>(-1);
  SBX_ASSIGN_OR_RETURN(sandbox->child_,
                       state->spawner.Spawn(plan, sandbox->cgroup_->DirFd(), child_fds, owner));
  const auto cloned = Clock::now();

  // The record gains its init before the child can do anything: from here a crash leaves a
  // process the sweep can find.
  if (auto init = IdentifyProcess(sandbox->child_.pid)) record.init = *init;
  record.cgroups = sandbox->cgroup_->paths();
  if (auto written = state->records.Write(record); !written) {
    return Fail(std::move(written.error()).Context("write the session record"));
  }

  const pid_t pid = sandbox->child_.pid;
  const bool in_cgroup = sandbox->child_.in_cgroup;
  SandboxCgroup& cgroup = *sandbox->cgroup_;
  Clock::duration join_time{};
  Status setup = CompleteChildSetup(
      plan, sync_parent.get(), [&]() -> Status { return WriteIdMappings(pid, mapping); },
      [&]() -> Status {
        if (in_cgroup || self_join) return {};
        auto t0 = Clock::now();
        Status joined = cgroup.Attach(pid);
        join_time = Clock::now() - t0;
        return joined;
      },
      Clock::now() + state->options.setup_timeout);
  if (!setup) return Fail(std::move(setup.error()).Context("start sandbox"));
  const auto execed = Clock::now();

  state->spawner.DrainLog(std::move(log_read), spec.session_id);
  sandbox->stream_ = std::make_unique<FdByteStream>(std::move(stream_parent));
  auto us = [](auto a, auto b) {
    return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
  };
  spdlog::debug(
      "sandbox {}: pid {} host uid {}: plan {}us, clone {}us, setup+exec {}us (cgroup join {}us)",
      spec.session_id, pid, sandbox->host_uid_, us(started, planned), us(planned, cloned),
      us(cloned, execed), std::chrono::duration_cast<std::chrono::microseconds>(join_time).count());
  return sandbox;
}

}  // namespace
}  // namespace ns

NamespaceBackend::NamespaceBackend(std::string state_dir, std::string agent_dir,
                                   std::unique_ptr<CgroupManager> cgroups)
    : NamespaceBackend(
          Options{.state_dir = std::move(state_dir), .agent_dir = std::move(agent_dir)},
          std::move(cgroups)) {}

NamespaceBackend::NamespaceBackend(Options options, std::unique_ptr<CgroupManager> cgroups)
    : state_(std::make_shared<ns::BackendState>(std::move(options), std::move(cgroups))) {}

NamespaceBackend::~NamespaceBackend() = default;

bool NamespaceBackend::privileged() const { return state_->host_ids.has_value(); }

const CgroupManager& NamespaceBackend::cgroups() const { return *state_->cgroups; }

Result<std::unique_ptr<Sandbox>> NamespaceBackend::Start(const SandboxSpec& spec) {
  SBX_ASSIGN_OR_RETURN(auto sandbox, ns::StartSandbox(state_, spec, {ns::kInitPath}));
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

Result<std::unique_ptr<Sandbox>> NamespaceBackend::StartProgram(const SandboxSpec& spec,
                                                                std::vector<std::string> argv) {
  SBX_ASSIGN_OR_RETURN(auto sandbox, ns::StartSandbox(state_, spec, std::move(argv)));
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

EnforcedLimits NamespaceBackend::PlanLimits(const Limits& limits) const {
  EnforcedLimits plan = state_->cgroups->Plan(limits);
  ns::DescribeCaps(state_->counter_caps, state_->host_ids.has_value(), plan);
  return plan;
}

Result<int> NamespaceBackend::SweepOrphans() {
  ns::BackendState& state = *state_;
  std::set<std::string> keep;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    keep = state.live;
  }
  int swept = 0;
  for (const ns::SessionRecord& record : state.records.ReadAll()) {
    if (keep.count(record.session_id) != 0) continue;
    // Another server that is still running owns it (e.g. `sessions gc` next to a live server).
    if (record.server.IsAlive() && !(record.server == state.self)) {
      keep.insert(record.session_id);
      continue;
    }
    // No init yet: the server died between the first record and the spawn.
    Fd pidfd;
    if (record.init.pid > 0) {
      SBX_ASSIGN_OR_RETURN(pidfd, ns::OpenPidfdIfSame(record.init));
    }
    if (pidfd) {
      // Not our child (its parent died): the kernel's reaper takes it; we wait for the exit.
      if (ns::PidfdSendSignal(pidfd.get(), SIGKILL) != 0 && errno != ESRCH) {
        return FailSys("pidfd_send_signal", std::to_string(record.init.pid));
      }
      if (!ns::WaitForExit(pidfd.get(), ns::kReapTimeout, /*reap=*/false)) {
        spdlog::warn("orphan sandbox {} (pid {}) did not exit after SIGKILL", record.session_id,
                     record.init.pid);
        keep.insert(record.session_id);
        continue;
      }
    }
    if (record.host_uid_claimed && state.host_ids) state.host_ids->Release(record.host_uid);
    state.records.Remove(record.session_id);
    spdlog::info("swept orphan sandbox {} (pid {})", record.session_id, record.init.pid);
    ++swept;
  }
  // Host ids claimed by servers that are gone, with no record (a crash between claim and
  // record): their processes died with the server (PDEATHSIG), so the claim alone remains.
  if (state.host_ids) {
    for (const auto& claim : state.host_ids->StaleClaims()) {
      if (keep.count(claim.session_id) != 0) continue;
      state.host_ids->Release(claim.host_id);
    }
  }
  // A group is kept when its session was kept above, or when its record, read now (after the
  // groups were listed), names a live server: another server's sandbox started since the
  // records were read above (its record goes down before its cgroup is made).
  auto keep_group = [&](const std::string& name) {
    if (keep.count(name) != 0) return true;
    std::optional<ns::SessionRecord> record = state.records.Read(name);
    return record && record->server.IsAlive();
  };
  if (auto cgroups = state.cgroups->SweepOrphans(keep_group); !cgroups) {
    return Fail(std::move(cgroups.error()).Context("sweep cgroups"));
  }
  return swept;
}

}  // namespace sandbox
