#include "runtime/gvisor/gvisor_backend.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

#include <spdlog/spdlog.h>

#include "runtime/agent/host/fd_byte_stream.h"
#include "runtime/base/fd_ops.h"
#include "runtime/base/files.h"
#include "runtime/base/units.h"
#include "runtime/gvisor/egress_bridge.h"
#include "runtime/gvisor/guest_seccomp.h"
#include "runtime/gvisor/oci_spec.h"
#include "runtime/gvisor/runsc.h"
#include "runtime/gvisor/runsc_reaper.h"
#include "runtime/ns/pidfd.h"
#include "runtime/ns/process_identity.h"
#include "runtime/ns/process_usage.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::gvisor {

// How long a sandbox may take from `runsc run` to its first byte on the stream (the agent's
// hello): the Sentry boots in about a second here (ptrace, a nested VM).
constexpr auto kBootTimeout = std::chrono::seconds(60);
constexpr auto kReapTimeout = std::chrono::seconds(10);
// How long a sandbox whose input ended may take to exit by itself before it is killed.
constexpr auto kOrderlyExit = std::chrono::milliseconds(500);
// What the Sentry and the Gofer themselves take (about 24 and 19 MB resident here), on top of
// the guest's memory limit in the host cgroup.
constexpr uint64_t kSentryMemoryBytes = 64ull << 20;

struct BackendState {
  GvisorOptions options;
  RunscCheck check;
  RunscOptions runsc;
  std::unique_ptr<CgroupManager> cgroups;
  std::string bundles_dir;
  ns::ProcessIdentity self;
  std::mutex mutex;
  std::set<std::string> live;                     // session ids of this backend's sandboxes
  nlohmann::json guest_seccomp = GuestSeccomp();  // the same for every sandbox

  // The parent groups of a state dir other than the system's are this server's alone: removed
  // when the backend goes (if empty by then), as the namespace backend does for its own.
  bool remove_cgroup_parents = false;
  ~BackendState() {
    if (!remove_cgroup_parents || !cgroups) return;
    for (const std::string& dir : cgroups->parent_dirs()) ::rmdir(dir.c_str());
  }

  bool cgroups_in_force() const { return cgroups->mode() != "none"; }
  std::string BundleDir(const std::string& id) const { return bundles_dir + "/" + id; }
  std::vector<std::string> Runsc(std::vector<std::string> subcommand) const {
    std::vector<std::string> argv = GlobalFlags(runsc, check.runsc_path);
    // Our cgroup holds the sandbox's processes (as root); runsc must not make its own.
    argv.push_back("--ignore-cgroups");
    // The project's seccomp policy on the guest too, the Sentry enforcing it (guest_seccomp.h).
    argv.push_back("--oci-seccomp");
    argv.insert(argv.end(), subcommand.begin(), subcommand.end());
    return argv;
  }
};

namespace {

bool IsSafeId(const std::string& id) {
  if (id.empty() || id.size() > layout::kMaxSessionIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// Waits up to `timeout` for the process behind `pidfd` (our child) to exit and reaps it.
// Returns its wait status, or -1 if it is still running.
int WaitAndReap(int pidfd, std::chrono::milliseconds timeout) {
  struct pollfd pfd = {pidfd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return -1;
  siginfo_t info = {};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0 &&
         errno == EINTR) {
  }
  return info.si_code == CLD_EXITED ? (info.si_status << 8) : info.si_status;
}

std::string LogTail(const std::string& path) {
  auto text = ReadFile(path);
  if (!text || text->empty()) return "(runsc wrote nothing)";
  std::string tail = text->size() > 1500 ? text->substr(text->size() - 1500) : *text;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

class GvisorSandbox final : public Sandbox {
 public:
  GvisorSandbox(std::shared_ptr<BackendState> state, std::string id)
      : state_(std::move(state)), id_(std::move(id)), bundle_(state_->BundleDir(id_)) {}

  ~GvisorSandbox() override {
    int status = -1;
    const auto closing = Clock::now();
    // The reaper's end is the end of `runsc run` and of every process it started (ForkRunsc),
    // and its status is that of `runsc run`.
    if (reaper_pidfd_ && stream_) {
      // The orderly way first: at the end of its input sandbox-init exits, and `runsc run` with
      // it, removing its container (about 20 ms). A killed one leaves it for `runsc delete`.
      stream_->CloseWrite();
      status = WaitAndReap(reaper_pidfd_.get(), kOrderlyExit);
    }
    if (reaper_pidfd_ && status < 0) {
      (void)Kill();
      status = WaitAndReap(reaper_pidfd_.get(), kReapTimeout);
      if (status < 0) {
        spdlog::error("sandbox {}: the processes of runsc pid {} did not exit", id_, pid_);
      }
    }
    const bool clean_exit = status >= 0 && WIFEXITED(status);
    spdlog::debug(
        "sandbox {}: runsc run {} after {} ms", id_, clean_exit ? "exited by itself" : "was killed",
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - closing).count());
    if (cgroup_ && state_->cgroups_in_force() && !clean_exit) (void)cgroup_->KillAll();
    const auto killed_all = Clock::now();
    // A stopped container goes with `delete` (0.1 s); --force (a second more) only when it
    // would not, e.g. a Sentry still running without a cgroup to kill it.
    if (started_ && !clean_exit && !RunRunsc(state_->Runsc({"delete", id_}))) {
      if (auto deleted = RunRunsc(state_->Runsc({"delete", "--force", id_})); !deleted) {
        if (deleted.error().message.find("does not exist") == std::string::npos &&
            deleted.error().message.find("not found") == std::string::npos) {
          spdlog::warn("sandbox {}: {}", id_, deleted.error().message);
        }
      }
    }
    const auto deleted_at = Clock::now();
    // A reaper still waiting above (a process that outlived the kill) ends with the delete.
    if (reaper_pidfd_ && status < 0 && WaitAndReap(reaper_pidfd_.get(), kReapTimeout) < 0) {
      spdlog::error("sandbox {}: runsc reaper pid {} left running", id_, reaper_pid_);
    }
    if (cgroup_) {
      if (auto destroyed = cgroup_->Destroy(); !destroyed) {
        spdlog::warn("sandbox {}: {}", id_, destroyed.error().message);
      }
    }
    // Where a close's time goes (docs/security.md "gVisor figures").
    spdlog::debug(
        "sandbox {}: group kill {} ms, runsc delete {} ms, cgroup removal {} ms", id_,
        std::chrono::duration_cast<std::chrono::milliseconds>(killed_all - closing).count(),
        std::chrono::duration_cast<std::chrono::milliseconds>(deleted_at - killed_all).count(),
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - deleted_at).count());
    egress_.reset();
    if (bundle_made_) (void)RemoveTree(bundle_);
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->live.erase(id_);
  }

  ByteStream& stream() override { return *stream_; }

  Status Kill() override {
    if (cgroup_ && state_->cgroups_in_force()) {
      if (auto killed = cgroup_->KillAll(); !killed) {
        spdlog::warn("sandbox {}: {}", id_, killed.error().message);
      }
    }
    // runsc runs the sandbox attached: the Sentry and the Gofer die with it.
    if (pidfd_ && ns::PidfdSendSignal(pidfd_.get(), SIGKILL) != 0 && errno != ESRCH) {
      return FailSys("pidfd_send_signal", std::to_string(pid_));
    }
    return {};
  }

  SandboxUsage Usage() override {
    if (cgroup_ && state_->cgroups_in_force()) return cgroup_->Usage();
    return pid_ > 0 ? ns::ProcessTreeUsage(pid_) : SandboxUsage{};
  }
  std::function<std::optional<uint64_t>()> StartMemoryPeakWindow() override {
    if (!cgroup_ || !state_->cgroups_in_force()) return {};
    auto reader = cgroup_->StartMemoryPeakWindow();
    if (!reader) return {};
    return std::move(*reader);
  }
  double CpuSeconds() override {
    if (cgroup_ && state_->cgroups_in_force()) return cgroup_->CpuSeconds();
    return pid_ > 0 ? ns::ProcessTreeUsage(pid_).cpu_seconds : 0;
  }
  uint64_t OomKills() override {
    return cgroup_ && state_->cgroups_in_force() ? cgroup_->OomKills() : 0;
  }
  Status SetCpuPriority(CpuPriority priority) override {
    return cgroup_ ? cgroup_->SetCpuPriority(priority) : Status{};
  }
  const EnforcedLimits& enforced_limits() const override { return limits_; }
  std::string backend_name() const override { return "gvisor"; }

  // Start fills these in as it goes; whatever is set is undone by the destructor.
  std::shared_ptr<BackendState> state_;
  std::string id_;
  std::string bundle_;
  bool bundle_made_ = false;
  bool started_ = false;
  std::unique_ptr<SandboxCgroup> cgroup_;
  pid_t pid_ = -1;  // `runsc run`
  Fd pidfd_;
  pid_t reaper_pid_ = -1;  // its parent, this server's child (ForkRunsc)
  Fd reaper_pidfd_;
  std::unique_ptr<ByteStream> stream_;
  std::unique_ptr<EgressBridge> egress_;
  EnforcedLimits limits_;
};

// The host cgroup's limits: room for the Sentry and the Gofer beside the guest's memory, and
// threads for them (HostPidsFor).
Limits HostLimits(const Limits& limits) {
  Limits host = limits;
  host.memory_bytes = limits.memory_bytes + kSentryMemoryBytes;
  host.pids = HostPidsFor(limits.pids);
  return host;
}

Status CheckDirectory(const std::string& path, const char* what) {
  struct stat st;
  if (path.empty() || path[0] != '/') {
    return Fail(ErrorCode::kSandboxUnavailable, "{} '{}' is not an absolute path", what, path);
  }
  if (::stat(path.c_str(), &st) != 0) return FailSys("stat", path);
  if (!S_ISDIR(st.st_mode)) {
    return Fail(ErrorCode::kSandboxUnavailable, "{} {}: not a directory", what, path);
  }
  return {};
}

// The image store makes layout::kGvisorEgressDir in every rootfs it unpacks; an image unpacked
// by an earlier version gets it here, as the store would (an empty directory under /dev, which
// every backend covers): the Gofer would otherwise make it, or fail with EACCES rootless.
Status EnsureEgressMountPoint(const std::string& rootfs) {
  const std::string path = rootfs + layout::kGvisorEgressDir;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "egress on gVisor needs the directory {} in the image rootfs {}, and this "
                "server cannot make it ({}): import the image again with this version",
                layout::kGvisorEgressDir, rootfs, std::strerror(errno));
  }
  return {};
}

Result<std::unique_ptr<GvisorSandbox>> StartSandbox(const std::shared_ptr<BackendState>& state,
                                                    const SandboxSpec& spec,
                                                    std::vector<std::string> argv) {
  if (!IsSafeId(spec.session_id)) {
    return Fail(ErrorCode::kInvalidSessionId, "bad session id '{}'", spec.session_id);
  }
  OciInputs inputs;
  inputs.rootfs = spec.rootfs;
  inputs.agent_dir = spec.agent_dir.empty() ? state->options.agent_dir : spec.agent_dir;
  inputs.wheelhouse = spec.wheelhouse;
  inputs.argv = std::move(argv);
  inputs.env = spec.env;
  inputs.workdir = spec.workdir;
  inputs.limits = spec.limits;
  inputs.seccomp = state->guest_seccomp;
  const bool egress = spec.egress_channel_fd >= 0;
  if (egress) inputs.egress_dir = state->BundleDir(spec.session_id) + "/egress";
  SBX_TRY(CheckDirectory(inputs.rootfs, "rootfs"));
  SBX_TRY(CheckDirectory(inputs.agent_dir, "agent dir"));
  if (egress) SBX_TRY(EnsureEgressMountPoint(inputs.rootfs));
  for (const std::string& point : MountPointsIn(inputs)) {
    struct stat st;
    std::string path = inputs.rootfs + "/" + point;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "rootfs {}: /{} is missing or not a directory (the gVisor backend mounts "
                  "there and does not change the image)",
                  inputs.rootfs, point);
    }
  }
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->live.insert(spec.session_id).second) {
      return Fail(ErrorCode::kInvalidSessionId, "session {} already has a sandbox",
                  spec.session_id);
    }
  }
  auto sandbox = std::make_unique<GvisorSandbox>(state, spec.session_id);
  const Limits host_limits = HostLimits(spec.limits);
  sandbox->limits_ = state->cgroups->Plan(host_limits);
  DescribeGvisorLimits(spec.limits, sandbox->limits_);

  // The bundle: config.json and the owner record the orphan sweep reads.
  SBX_TRY(MakeDirs(state->bundles_dir, 0700));
  if (::mkdir(sandbox->bundle_.c_str(), 0700) != 0) return FailSys("mkdir", sandbox->bundle_);
  sandbox->bundle_made_ = true;
  SBX_TRY(WriteFile(sandbox->bundle_ + "/owner", state->self.ToString() + "\n", 0600));
  SBX_TRY(WriteFile(sandbox->bundle_ + "/config.json", OciSpecFor(inputs).dump(2), 0600));

  if (egress) {
    SBX_ASSIGN_OR_RETURN(sandbox->egress_,
                         EgressBridge::Start(inputs.egress_dir, spec.egress_channel_fd));
  }

  SBX_ASSIGN_OR_RETURN(sandbox->cgroup_, state->cgroups->Create(spec.session_id, host_limits));
  if (spec.cpu_priority != CpuPriority::kNormal) {
    SBX_TRY(sandbox->cgroup_->SetCpuPriority(spec.cpu_priority));
  }

  Fd stream_parent, stream_child, go_read, go_write;
  SBX_TRY(MakeSocketPair(SOCK_STREAM, stream_parent, stream_child, "agent stream"));
  SBX_TRY(MakePipe(go_read, go_write));
  const std::string log_path = sandbox->bundle_ + "/runsc.log";
  Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log) return FailSys("open", log_path);

  // The Gofer connects to the egress socket for the sandbox (egress_bridge.h); without egress
  // a host socket stays out of reach (EPERM), runsc's default.
  std::vector<std::string> command = {"run", "--bundle", sandbox->bundle_, spec.session_id};
  if (egress) command.insert(command.begin(), "--host-uds=open");
  std::vector<std::string> run = state->Runsc(std::move(command));
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) return FailSys("open", "/dev/null");
  SBX_ASSIGN_OR_RETURN(RunscProcesses forked,
                       ForkRunsc(run, stream_child.get(), log.get(), go_read.get(), null.get()));
  sandbox->reaper_pidfd_ = Fd(ns::PidfdOpen(forked.reaper));
  if (!sandbox->reaper_pidfd_) {
    ::kill(forked.reaper, SIGKILL);  // its runsc child, waiting on `go`, gives up with it
    ::waitpid(forked.reaper, nullptr, 0);
    return FailSys("pidfd_open", "runsc reaper");
  }
  sandbox->reaper_pid_ = forked.reaper;
  // `runsc run` is the reaper's child, which reaps it only at the end: its pid stays its own.
  sandbox->pid_ = forked.runsc;
  sandbox->pidfd_ = Fd(ns::PidfdOpen(forked.runsc));
  if (!sandbox->pidfd_) return FailSys("pidfd_open", "runsc run");
  if (auto joined = sandbox->cgroup_->Attach(sandbox->pid_); !joined) {
    return Fail(std::move(joined.error()).Context("move runsc into the sandbox cgroup"));
  }
  if (::write(go_write.get(), "g", 1) != 1) return FailSys("write", "runsc start signal");
  sandbox->started_ = true;
  stream_child.Reset();
  log.Reset();

  // Wait for the first byte from inside (the agent's hello) or the end of `runsc run`, whose
  // log then says why: the session manager would only see a closed stream.
  struct pollfd fds[2] = {{stream_parent.get(), POLLIN, 0}, {sandbox->pidfd_.get(), POLLIN, 0}};
  int n;
  do {
    n = ::poll(fds, 2, static_cast<int>(std::chrono::milliseconds(kBootTimeout).count()));
  } while (n < 0 && errno == EINTR);
  char peek;
  bool has_data = (fds[0].revents & POLLIN) != 0 &&
                  ::recv(stream_parent.get(), &peek, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
  if (!has_data) {
    (void)sandbox->Kill();
    std::string why = n == 0
                          ? fmt::format("no word from the sandbox within {}s", kBootTimeout.count())
                          : "runsc run ended before the sandbox spoke";
    return Fail(ErrorCode::kSandboxUnavailable, "gVisor sandbox {}: {}; runsc log: {}",
                spec.session_id, why, LogTail(log_path));
  }
  sandbox->stream_ = std::make_unique<FdByteStream>(std::move(stream_parent));
  return sandbox;
}

}  // namespace

std::string GvisorCgroupOwner(const std::string& state_dir) {
  return CgroupOwnerFor(state_dir) + "-gvisor";
}

uint32_t HostPidsFor(uint32_t guest_pids) {
  // The Sentry's Go runtime threads, the Gofer's, and with ptrace a stub process (and thread)
  // per guest address space and thread: generous, so the Sentry never aborts for a thread.
  // max(1024, 4x) was not: a fork bomb at a 64-task guest limit had the pids controller refuse
  // the Sentry a thread, and the whole sandbox ended (the escape suite's fork bomb case).
  return std::max<uint32_t>(4096, guest_pids * 32);
}

RunscCheck CheckRunsc(const std::string& runsc, const std::string& platform) {
  RunscCheck check;
  auto path = FindRunsc(runsc);
  if (!path) {
    check.detail = path.error().message;
    return check;
  }
  check.runsc_path = *path;
  auto version = ReadRunscVersion(*path);
  if (!version) {
    check.detail = version.error().message;
    return check;
  }
  check.version = version->line;
  std::string problem = PlatformProblem(platform, version->release);
  if (!problem.empty()) {
    check.detail = "SANDBOX_GVISOR_PLATFORM=" + platform + ": " + problem;
    return check;
  }
  check.ok = true;
  check.detail = fmt::format("{} ({}), platform {}{}", *path, version->line, platform,
                             ::geteuid() == 0 ? "" : ", --rootless: no cgroup limits");
  return check;
}

Result<std::unique_ptr<GvisorBackend>> GvisorBackend::Open(GvisorOptions options,
                                                           std::unique_ptr<CgroupManager> cgroups) {
  auto state = std::make_shared<BackendState>();
  state->check = CheckRunsc(options.runsc, options.platform);
  if (!state->check.ok) {
    return Fail(ErrorCode::kSandboxUnavailable, "gVisor unavailable: {}", state->check.detail);
  }
  state->runsc.binary = state->check.runsc_path;
  state->runsc.platform = options.platform;
  state->runsc.root = options.state_dir + "/gvisor/runsc";
  state->runsc.rootless = ::geteuid() != 0;
  state->bundles_dir = options.state_dir + "/gvisor/bundles";
  SBX_TRY(MakeDirs(state->runsc.root, 0700));
  SBX_TRY(MakeDirs(state->bundles_dir, 0700));
  state->cgroups =
      cgroups ? std::move(cgroups) : CgroupManager::Detect(GvisorCgroupOwner(options.state_dir));
  state->remove_cgroup_parents = CgroupOwnerFor(options.state_dir) != kDefaultCgroupOwner;
  if (auto me = ns::IdentifyProcess(::getpid())) state->self = *me;
  state->options = std::move(options);
  return std::unique_ptr<GvisorBackend>(new GvisorBackend(std::move(state)));
}

GvisorBackend::GvisorBackend(std::shared_ptr<BackendState> state) : state_(std::move(state)) {}
GvisorBackend::~GvisorBackend() = default;

const RunscCheck& GvisorBackend::runsc() const { return state_->check; }
bool GvisorBackend::rootless() const { return state_->runsc.rootless; }

Result<std::unique_ptr<Sandbox>> GvisorBackend::Start(const SandboxSpec& spec) {
  SBX_ASSIGN_OR_RETURN(auto sandbox, StartSandbox(state_, spec, {layout::kAgentInit}));
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

Result<std::unique_ptr<Sandbox>> GvisorBackend::StartProgram(const SandboxSpec& spec,
                                                             std::vector<std::string> argv) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return Fail(ErrorCode::kInvalidArgument, "the sandbox program must be an absolute path");
  }
  SBX_ASSIGN_OR_RETURN(auto sandbox, StartSandbox(state_, spec, std::move(argv)));
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

EnforcedLimits GvisorBackend::PlanLimits(const Limits& limits) const {
  EnforcedLimits plan = state_->cgroups->Plan(HostLimits(limits));
  DescribeGvisorLimits(limits, plan);
  return plan;
}

void DescribeGvisorLimits(const Limits& limits, EnforcedLimits& plan) {
  const bool cgroup = plan.cgroup_mode == "cgroup1" || plan.cgroup_mode == "cgroup2";
  for (EnforcedLimit& limit : plan.limits) {
    if (limit.name == "pids") {
      // The guest's tasks are the Sentry's to count; the host cgroup caps runsc's threads.
      limit.mechanism = LimitMechanism::kRlimit;
      limit.value = std::to_string(limits.pids);
      limit.note = cgroup ? fmt::format(
                                "RLIMIT_NPROC in the Sentry; the host cgroup caps the "
                                "Sentry, Gofer and stubs at {}",
                                HostPidsFor(limits.pids))
                          : "RLIMIT_NPROC in the Sentry";
    } else if (limit.name == "memory" && cgroup) {
      limit.value = FormatBytes(limits.memory_bytes);
      limit.note = fmt::format(
          "RLIMIT_AS per process in the Sentry; the host cgroup holds the Sentry at {} more "
          "(guest tmpfs included) and at that limit kills the whole sandbox",
          FormatBytes(kSentryMemoryBytes));
    } else if (limit.name == "memory") {
      limit.note = "RLIMIT_AS in the Sentry (--rootless: no cgroup)";
    }
  }
}

Result<int> GvisorBackend::SweepOrphans() {
  BackendState& state = *state_;
  std::set<std::string> keep;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    keep = state.live;
  }
  int swept = 0;
  std::vector<std::string> bundles;
  if (DIR* dir = ::opendir(state.bundles_dir.c_str())) {
    while (struct dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (IsSafeId(name)) bundles.push_back(name);
    }
    ::closedir(dir);
  }
  for (const std::string& id : bundles) {
    if (keep.count(id) != 0) continue;
    auto owner_text = ReadFile(state.BundleDir(id) + "/owner");
    auto owner = owner_text ? ns::ProcessIdentity::Parse(*owner_text) : std::nullopt;
    if (owner && owner->IsAlive() && !(*owner == state.self)) {
      keep.insert(id);  // another live server's (`sessions gc` next to a server)
      continue;
    }
    (void)RunRunsc(state.Runsc({"delete", "--force", id}));
    (void)RemoveTree(state.BundleDir(id));
    spdlog::info("swept orphan gVisor sandbox {}", id);
    ++swept;
  }
  auto keep_group = [&](const std::string& name) {
    if (keep.count(name) != 0) return true;
    auto owner_text = ReadFile(state.BundleDir(name) + "/owner");
    auto owner = owner_text ? ns::ProcessIdentity::Parse(*owner_text) : std::nullopt;
    return owner && owner->IsAlive();
  };
  if (auto cgroups = state.cgroups->SweepOrphans(keep_group); !cgroups) {
    return Fail(std::move(cgroups.error()).Context("sweep cgroups"));
  }
  return swept;
}

}  // namespace sandbox::gvisor
