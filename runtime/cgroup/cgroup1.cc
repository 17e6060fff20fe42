#include "runtime/cgroup/cgroup1.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/base/files.h"
#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/limits_plan.h"
#include "runtime/cgroup/usage_files.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::cgroup {

bool Cgroup1Hierarchy::Has(const std::string& controller) const {
  return std::find(controllers.begin(), controllers.end(), controller) != controllers.end();
}

namespace {

using std::chrono::milliseconds;

// The controllers we place sandboxes in; the first one must exist.
constexpr const char* kControllers[] = {"memory", "pids", "cpu", "cpuacct", "freezer"};

const Cgroup1Hierarchy* Find(const std::vector<Cgroup1Hierarchy>& hierarchies,
                             const std::string& controller) {
  for (const auto& h : hierarchies) {
    if (h.Has(controller)) return &h;
  }
  return nullptr;
}

// A cpuset co-mounted with a controller we use: a new group starts with empty cpuset.cpus and
// cpuset.mems and refuses tasks until they are copied from the parent (cgroup-v1/cpusets.rst).
Status InheritCpuset(const std::string& dir) {
  std::string parent = dir.substr(0, dir.rfind('/'));
  for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
    if (!PathExists(dir + "/" + file)) continue;
    SBX_ASSIGN_OR_RETURN(std::string value, ReadControl(parent + "/" + file));
    SBX_TRY(WriteControl(dir + "/" + file, value));
  }
  return {};
}

// Makes a sessions' parent group (there already is one: fine).
Status MakeParent(const Cgroup1Hierarchy& h) {
  if (::mkdir(h.parent.c_str(), 0755) != 0 && errno != EEXIST) return FailSys("mkdir", h.parent);
  if (h.Has("cpuset")) SBX_TRY(InheritCpuset(h.parent));
  return {};
}

// The sessions' parent in the cpu hierarchy weighs as much as its sessions would as processes.
// On v1 a group directly under the root competes with every root-level task one to one, so
// with the default cpu.shares all sessions together would get one process's share: a burst of
// calls on many sessions then waits for the scheduler (50 sessions x 20 calls over HTTP: p99
// 57-101 ms before, 28 ms with the sessions weighted). Counted from the directory, so
// sessions of other servers under the same parent count too; best effort.
// This server's sessions lowered to background priority between their calls (cold sessions
// importing their preload) do not count: the parent's weight is spent whichever child runs, so
// fifty importing sandboxes would otherwise weigh fifty processes against the server's own
// threads and starve the calls they serve (issue #28: stdio burst p50 1.1 s). A group started at
// background priority (the pool's, idle until claimed, refilled one at a time) still counts, as
// every idle session does.
std::atomic<int> background_groups{0};

void WeighSessionsParent(const std::vector<Cgroup1Hierarchy>& hierarchies) {
  const Cgroup1Hierarchy* cpu = Find(hierarchies, "cpu");
  if (cpu == nullptr) return;
  int64_t sessions = -background_groups.load();
  for (const std::string& name : ListChildGroups(cpu->parent)) {
    if (name.rfind(layout::kSessionIdPrefix, 0) == 0) ++sessions;
  }
  // cpu.shares: 1024 is one process; the kernel caps it at 262144.
  int64_t shares = std::clamp<int64_t>(sessions * 1024, 1024, 262144);
  if (auto st = WriteControl(cpu->parent + "/cpu.shares", std::to_string(shares)); !st) {
    spdlog::debug("cgroup1: weighing the sessions' parent: {}", st.error().message);
  }
}

class Cgroup1Group final : public SandboxCgroup {
 public:
  // `dirs[i]` is the group in `hierarchies[i]`.
  Cgroup1Group(std::vector<Cgroup1Hierarchy> hierarchies, std::vector<std::string> dirs)
      : hierarchies_(std::move(hierarchies)),
        dirs_(std::move(dirs)),
        usage_files_(CgroupUsageFiles::Open(/*v2=*/false, DirFor("memory"), DirFor("cpuacct"))) {}
  ~Cgroup1Group() override {
    if (auto st = Destroy(); !st) spdlog::warn("cgroup1: {}", st.error().message);
  }

  Status Attach(pid_t pid) override {
    for (const auto& dir : dirs_) SBX_TRY(WriteControl(dir + "/cgroup.procs", std::to_string(pid)));
    attached_ = true;
    return {};
  }

  int DirFd() const override { return -1; }

  Result<std::vector<Fd>> OpenSelfJoinFiles() override {
    std::vector<Fd> files;
    for (const auto& dir : dirs_) {
      std::string tasks = dir + "/tasks";
      Fd file(::open(tasks.c_str(), O_WRONLY | O_CLOEXEC));
      if (!file) return FailSys("open", tasks);
      files.push_back(std::move(file));
    }
    attached_ = true;
    return files;
  }

  Status SetCpuPriority(CpuPriority priority) override {
    std::string cpu = DirFor("cpu");
    if (cpu.empty()) return {};
    bool background = priority == CpuPriority::kBackground;
    // cpu.shares stays the default (1024) either way: background_cpu.h says why.
    if (!background) {
      background_.reset();  // gives the group its own quota back if it was capped
    } else if (!background_) {
      SBX_ASSIGN_OR_RETURN(
          background_, BackgroundCpuGroup::Join(cpu, /*v2=*/false, BackgroundCpuCap::Instance()));
    }
    bool uncounted = background && attached_;
    if (uncounted != uncounted_) {
      uncounted_ = uncounted;
      background_groups += uncounted ? 1 : -1;
      WeighSessionsParent(hierarchies_);
    }
    return {};
  }

  Status KillAll() override {
    std::string procs = DirFor("memory") + "/cgroup.procs";
    if (!PathExists(procs)) return {};
    // An empty group has nobody to kill and nobody to fork: no freeze, whose cycle flips a
    // kernel static key twice (the kernel's code patched on every CPU) for nothing. A task
    // that joins after this look (a sandbox's first process joins by itself) is one the
    // namespace's kill of its init takes.
    if (auto listed = ReadPids(procs); listed && listed->empty()) return {};
    // v1 has no cgroup.kill. Freezing first means no process can fork a new one between our
    // reading cgroup.procs and the kills; the SIGKILLs take effect on thaw.
    std::string freezer = DirFor("freezer");
    bool frozen =
        !freezer.empty() && WriteControl(freezer + "/freezer.state", "FROZEN").has_value();
    if (frozen) {
      // Tasks stop in well under a millisecond: the first looks come soon (a one-shot run's
      // teardown waits for this), then every millisecond, about 100 ms in all.
      auto poll = std::chrono::microseconds(100);
      for (int i = 0; i < 100; ++i) {
        auto state = ReadControl(freezer + "/freezer.state");
        if (!state || *state == "FROZEN") break;  // FREEZING while tasks are still stopping
        std::this_thread::sleep_for(poll);
        poll = std::min(poll * 2, std::chrono::microseconds(milliseconds(1)));
      }
      if (auto pids = ReadPids(procs)) {
        for (pid_t pid : *pids) ::kill(pid, SIGKILL);
      }
      (void)WriteControl(freezer + "/freezer.state", "THAWED");
    }
    SBX_TRY(KillListedUntilEmpty(procs, kDrainTimeout));
    return {};
  }

  Result<MemoryPeakReader> StartMemoryPeakWindow() const override {
    return usage_files_.StartMemoryPeakWindow();
  }

  SandboxUsage Usage() const override {
    SandboxUsage usage;
    std::string memory = DirFor("memory");
    usage.memory_bytes = ReadUint(memory + "/memory.usage_in_bytes").value_or(0);
    // The session's peak: what the file says since the last per-call reset, or before it.
    usage.memory_peak_bytes = std::max(ReadUint(memory + "/memory.max_usage_in_bytes").value_or(0),
                                       usage_files_.PeakBeforeResets());
    usage.oom_kills = OomKills();
    if (std::string pids = DirFor("pids"); !pids.empty()) {
      usage.pids = static_cast<uint32_t>(ReadUint(pids + "/pids.current").value_or(0));
    }
    usage.cpu_seconds = CpuSeconds();
    return usage;
  }

  double CpuSeconds() const override { return usage_files_.CpuSeconds(); }

  uint64_t OomKills() const override { return usage_files_.OomKills(); }

  Status Destroy() override {
    if (destroyed_) return {};
    background_.reset();  // before its directories go
    SBX_TRY(KillAll());
    usage_files_.Close();
    for (const auto& dir : dirs_) SBX_TRY(RemoveCgroupDir(dir, kDrainTimeout));
    destroyed_ = true;
    if (uncounted_) {
      uncounted_ = false;
      --background_groups;
    }
    WeighSessionsParent(hierarchies_);
    return {};
  }

  std::vector<std::string> paths() const override { return dirs_; }

 private:
  std::string DirFor(const std::string& controller) const {
    for (size_t i = 0; i < hierarchies_.size(); ++i) {
      if (hierarchies_[i].Has(controller)) return dirs_[i];
    }
    return "";
  }

  std::vector<Cgroup1Hierarchy> hierarchies_;
  std::vector<std::string> dirs_;
  CgroupUsageFiles usage_files_;  // read around every run, open while the group lives
  bool destroyed_ = false;
  bool attached_ = false;   // a process has joined (SetCpuPriority before that: a pooled start)
  bool uncounted_ = false;  // counted in background_groups
  std::unique_ptr<BackgroundCpuGroup> background_;  // while at background priority
};

class Cgroup1Manager final : public CgroupManager {
 public:
  Cgroup1Manager(Cgroup1Setup setup, std::string reason)
      : setup_(std::move(setup)), reason_(std::move(reason)) {}

  std::string mode() const override { return "cgroup1"; }
  std::string reason() const override { return reason_; }

  EnforcedLimits Plan(const Limits& limits) const override {
    CgroupCapabilities caps;
    caps.mechanism = LimitMechanism::kCgroup1;
    caps.memory = true;
    caps.pids = Find(setup_.hierarchies, "pids") != nullptr;
    caps.cpu = Find(setup_.hierarchies, "cpu") != nullptr;
    caps.swap = setup_.memsw;
    if (!caps.swap) {
      caps.swap_note = HostHasSwap()
                           ? "memory.memsw.limit_in_bytes is absent (swap accounting off): "
                             "sandboxes can swap"
                           : "memory.memsw.limit_in_bytes is absent; this host has no swap, so "
                             "none can be used";
    }
    if (!setup_.oom_kill) {
      caps.memory_note =
          "memory.oom_control has no oom_kill count (Linux < 4.13): OOM is reported from "
          "memory.failcnt (times the limit was hit)";
    }
    if (!caps.cpu) caps.cpu_note = "no v1 cpu hierarchy is mounted: CPU time is not limited";
    EnforcedLimits plan = BuildPlan("cgroup1", limits, caps);
    plan.reason = reason_;
    return plan;
  }

  Result<std::unique_ptr<SandboxCgroup>> Create(const std::string& session_id,
                                                const Limits& limits) override {
    SBX_ASSIGN_OR_RETURN(std::string name, GroupNameFor(session_id));
    std::vector<std::string> dirs;
    for (const auto& h : setup_.hierarchies) {
      std::string dir = h.parent + "/" + name;
      int mkdir_result = ::mkdir(dir.c_str(), 0755);
      if (mkdir_result != 0 && errno == ENOENT && MakeParent(h)) {
        // The parent went while this server had no session: a server of the same state dir
        // ended, or `sessions gc` ran, and removed it as unused. Made again.
        mkdir_result = ::mkdir(dir.c_str(), 0755);
      }
      if (mkdir_result != 0) {
        auto error = SysError("mkdir", dir);
        for (const auto& made : dirs) (void)RemoveCgroupDir(made, kDrainTimeout);
        return Fail(std::move(error).Context("create the session cgroup"));
      }
      dirs.push_back(dir);
    }
    // From here the group owns the directories and removes them on any failure.
    auto group = std::make_unique<Cgroup1Group>(setup_.hierarchies, dirs);
    if (auto st = WriteLimits(dirs, limits); !st) {
      return Fail(std::move(st.error()).Context("write cgroup v1 limits"));
    }
    WeighSessionsParent(setup_.hierarchies);
    return std::unique_ptr<SandboxCgroup>(std::move(group));
  }

  Result<int> SweepOrphans(const KeepGroup& keep) override {
    std::set<std::string> listed;
    for (const auto& h : setup_.hierarchies) {
      for (const std::string& name : ListChildGroups(h.parent)) {
        if (name.rfind(layout::kSessionIdPrefix, 0) == 0) listed.insert(name);
      }
    }
    std::set<std::string> orphans;
    for (const std::string& name : listed) {
      if (!keep(name)) orphans.insert(name);
    }
    for (const std::string& name : orphans) {
      std::vector<std::string> dirs;
      for (const auto& h : setup_.hierarchies) dirs.push_back(h.parent + "/" + name);
      Cgroup1Group orphan(setup_.hierarchies, dirs);
      SBX_TRY(orphan.Destroy().map_error(
          [&](Error e) { return std::move(e).Context("sweep orphan " + name); }));
    }
    return static_cast<int>(orphans.size());
  }

  std::vector<std::string> parent_dirs() const override {
    std::vector<std::string> dirs;
    for (const auto& h : setup_.hierarchies) dirs.push_back(h.parent);
    return dirs;
  }

 private:
  Status WriteLimits(const std::vector<std::string>& dirs, const Limits& limits) const {
    for (size_t i = 0; i < dirs.size(); ++i) {
      const auto& h = setup_.hierarchies[i];
      const std::string& dir = dirs[i];
      if (h.Has("cpuset")) SBX_TRY(InheritCpuset(dir));
      if (h.Has("memory")) {
        // memsw (memory + swap) must stay >= the memory limit: set the memory limit first.
        // Equal values leave no room for swap.
        std::string bytes = std::to_string(limits.memory_bytes);
        SBX_TRY(WriteControl(dir + "/memory.limit_in_bytes", bytes));
        if (setup_.memsw) SBX_TRY(WriteControl(dir + "/memory.memsw.limit_in_bytes", bytes));
        // No oom_kill_disable: the kernel kills the biggest task (the worker), init survives.
      }
      if (h.Has("pids")) SBX_TRY(WriteControl(dir + "/pids.max", std::to_string(limits.pids)));
      if (h.Has("cpu")) {
        SBX_TRY(WriteControl(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodMicros)));
        SBX_TRY(
            WriteControl(dir + "/cpu.cfs_quota_us", std::to_string(CpuQuotaMicros(limits.cpus))));
      }
    }
    return {};
  }

  Cgroup1Setup setup_;
  std::string reason_;
};

}  // namespace

Result<Cgroup1Setup> PrepareCgroup1(const std::string& owner) {
  if (::geteuid() != 0) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "cgroup v1 needs root (v1 has no safe delegation to other users)");
  }
  SBX_ASSIGN_OR_RETURN(auto mounts, ReadCgroupMounts());
  Cgroup1Setup setup;
  std::set<std::string> used_points;
  for (const char* controller : kControllers) {
    for (const auto& mount : mounts) {
      if (mount.v2 || used_points.count(mount.mount_point) != 0) continue;
      if (std::find(mount.controllers.begin(), mount.controllers.end(), controller) ==
          mount.controllers.end()) {
        continue;
      }
      used_points.insert(mount.mount_point);
      setup.hierarchies.push_back({mount.mount_point + "/" + owner, mount.controllers});
      break;
    }
    if (setup.hierarchies.empty()) {  // after "memory", the first of kControllers
      return Fail(ErrorCode::kSandboxUnavailable, "no cgroup v1 memory hierarchy is mounted");
    }
  }
  for (const auto& h : setup.hierarchies) SBX_TRY(MakeParent(h));
  const std::string& memory = setup.hierarchies.front().parent;
  setup.memsw = PathExists(memory + "/memory.memsw.limit_in_bytes");
  auto oom_control = ReadFile(memory + "/memory.oom_control");
  setup.oom_kill = oom_control && FindKeyedValue(*oom_control, "oom_kill").has_value();
  return setup;
}

std::unique_ptr<CgroupManager> MakeCgroup1Manager(Cgroup1Setup setup, std::string reason) {
  return std::make_unique<Cgroup1Manager>(std::move(setup), std::move(reason));
}

}  // namespace sandbox::cgroup
