#include "runtime/cgroup/cgroup2.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/limits_plan.h"
#include "runtime/cgroup/systemd_scope.h"
#include "runtime/cgroup/usage_files.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::cgroup {
namespace {

using std::chrono::milliseconds;

bool HasWord(std::string_view list, std::string_view word) {
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(' ', pos);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(pos, end - pos) == word) return true;
    pos = end + 1;
  }
  return false;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct V2Mount {
  std::string point;
  std::string root = "/";
};

Result<V2Mount> FindV2Mount() {
  struct statfs fs {};
  if (::statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
    return V2Mount{"/sys/fs/cgroup", "/"};
  }
  SBX_ASSIGN_OR_RETURN(auto mounts, ReadCgroupMounts());
  for (const auto& mount : mounts) {
    if (mount.v2) return V2Mount{mount.mount_point, mount.root};
  }
  return Fail(ErrorCode::kSandboxUnavailable, "no cgroup2 filesystem is mounted");
}

// The directory of cgroup `path` (as /proc/self/cgroup names it) under `mount`.
std::string DirOf(const V2Mount& mount, const std::string& path) {
  std::string relative = path;
  if (mount.root != "/" && relative.rfind(mount.root, 0) == 0) {
    relative = relative.substr(mount.root.size());
  }
  if (relative.empty() || relative == "/") return mount.point;
  return mount.point + relative;
}

bool OwnedBy(const std::string& path, uid_t uid) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_uid == uid;
}

// A cgroup is delegated to us when we own it and the files that moving processes and enabling
// controllers write (cgroup-v2.rst "Delegation Containment").
bool IsDelegatedToUs(const std::string& dir) {
  uid_t uid = ::geteuid();
  return OwnedBy(dir, uid) && OwnedBy(dir + "/cgroup.procs", uid) &&
         OwnedBy(dir + "/cgroup.subtree_control", uid) &&
         ::faccessat(AT_FDCWD, dir.c_str(), W_OK, AT_EACCESS) == 0;
}

std::string OwnerText(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "unknown owner";
  return fmt::format("owned by uid {}", st.st_uid);
}

// Enables memory and pids (required) and cpu (when available) for the children of `dir`.
// Returns whether cpu is enabled. Keeps the kernel's errno (EBUSY: `dir` holds processes).
Result<bool> EnableControllers(const std::string& dir) {
  SBX_ASSIGN_OR_RETURN(std::string available, ReadControl(dir + "/cgroup.controllers"));
  SBX_ASSIGN_OR_RETURN(std::string enabled, ReadControl(dir + "/cgroup.subtree_control"));
  for (const char* controller : {"memory", "pids"}) {
    if (!HasWord(available, controller)) {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "the {} controller is not available in {} (cgroup.controllers: '{}')", controller,
                  dir, available);
    }
  }
  for (const char* controller : {"memory", "pids"}) {
    if (!HasWord(enabled, controller)) {
      SBX_TRY(WriteControl(dir + "/cgroup.subtree_control", fmt::format("+{}", controller)));
    }
  }
  if (HasWord(enabled, "cpu")) return true;
  if (!HasWord(available, "cpu")) return false;
  // cpu can be refused (e.g. EINVAL while a realtime task is in the subtree): limit what we
  // can and report cpu as not limited.
  auto cpu = WriteControl(dir + "/cgroup.subtree_control", "+cpu");
  if (!cpu) spdlog::warn("cgroup2: cpu controller not enabled: {}", cpu.error().message);
  return cpu.has_value();
}

std::string ListForMessage(const std::vector<pid_t>& pids) {
  std::string text;
  for (size_t i = 0; i < pids.size() && i < 5; ++i) {
    text += (i ? ", " : "") + std::to_string(pids[i]);
  }
  if (pids.size() > 5) text += ", ...";
  return text;
}

// Prepares `<base>/<owner>`. `base_is_own`: base is the cgroup this process is in, which the
// "no internal processes" rule forces us to leave before enabling controllers in it.
Result<Cgroup2Setup> PrepareAt(const V2Mount& mount, const std::string& base,
                               const std::string& owner, bool base_is_own, bool delegated) {
  Cgroup2Setup setup;
  setup.mount = mount.point;
  setup.delegated = delegated;
  auto enabled = EnableControllers(base);
  // The root cgroup is exempt from "no internal processes"; any other cgroup with processes
  // refuses to enable controllers for its children with EBUSY (cgroup-v2.rst).
  if (!enabled && enabled.error().sys_errno == EBUSY) {
    SBX_ASSIGN_OR_RETURN(std::vector<pid_t> pids, ReadPids(base + "/cgroup.procs"));
    std::vector<pid_t> others;
    for (pid_t pid : pids) {
      if (pid != ::getpid()) others.push_back(pid);
    }
    if (!base_is_own || !others.empty()) {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "cannot enable controllers in {}: it holds other processes ({}), and cgroup v2 "
                  "allows controllers only in groups without processes",
                  base, ListForMessage(others));
    }
    // Like systemd and nsjail: move ourselves to a leaf, then enable controllers in `base`.
    std::string leaf = base + "/" + kServerLeaf;
    if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) return FailSys("mkdir", leaf);
    SBX_TRY(WriteControl(leaf + "/cgroup.procs", std::to_string(::getpid())).map_error([](Error e) {
      return std::move(e).Context("move the server to a leaf");
    }));
    setup.moved_to = leaf;
    enabled = EnableControllers(base);
  }
  if (!enabled) return Fail(std::move(enabled.error()));
  bool cpu = *enabled;

  setup.owner = owner;
  setup.parent = base + "/" + owner;
  if (::mkdir(setup.parent.c_str(), 0755) != 0 && errno != EEXIST) {
    return FailSys("mkdir", setup.parent);
  }
  SBX_ASSIGN_OR_RETURN(bool parent_cpu, EnableControllers(setup.parent));
  setup.cpu = cpu && parent_cpu;
  setup.swap = PathExists(setup.parent + "/memory.swap.max");
  return setup;
}

class Cgroup2Group final : public SandboxCgroup {
 public:
  Cgroup2Group(std::string dir, Fd dir_fd)
      : dir_(std::move(dir)),
        dir_fd_(std::move(dir_fd)),
        usage_files_(CgroupUsageFiles::Open(/*v2=*/true, dir_, dir_)) {}
  ~Cgroup2Group() override {
    if (auto st = Destroy(); !st) spdlog::warn("cgroup2: {}", st.error().message);
  }

  Status Attach(pid_t pid) override {
    return WriteControl(dir_ + "/cgroup.procs", std::to_string(pid));
  }

  int DirFd() const override { return dir_fd_.get(); }

  // The weight stays the default (100) either way: background_cpu.h says why.
  Status SetCpuPriority(CpuPriority priority) override {
    if (priority == CpuPriority::kNormal) {
      background_.reset();  // gives the group its own quota back if it was capped
      return {};
    }
    if (background_ || !PathExists(dir_ + "/cpu.max")) return {};  // no cpu controller: none
    SBX_ASSIGN_OR_RETURN(background_,
                         BackgroundCpuGroup::Join(dir_, /*v2=*/true, BackgroundCpuCap::Instance()));
    return {};
  }

  Status KillAll() override {
    if (!PathExists(dir_)) return {};
    std::string kill_file = dir_ + "/cgroup.kill";
    if (PathExists(kill_file)) {
      // Linux >= 5.14: one write SIGKILLs the whole subtree, race-free against forks.
      auto st = WriteControl(kill_file, "1");
      if (st || st.error().sys_errno == ENOENT) return {};
      return st;
    }
    // Older kernels: freeze (>= 5.2) so nothing forks while we kill, then thaw so the pending
    // SIGKILLs are acted on, then sweep anything left.
    std::string freeze_file = dir_ + "/cgroup.freeze";
    bool frozen = PathExists(freeze_file) && WriteControl(freeze_file, "1").has_value();
    if (frozen) {
      for (int i = 0; i < 50; ++i) {
        auto events = ReadFile(dir_ + "/cgroup.events");
        if (!events || FindKeyedValue(*events, "frozen").value_or(0) == 1) break;
        std::this_thread::sleep_for(milliseconds(2));
      }
      if (auto pids = ReadPids(dir_ + "/cgroup.procs")) {
        for (pid_t pid : *pids) ::kill(pid, SIGKILL);
      }
      (void)WriteControl(freeze_file, "0");
    }
    SBX_TRY(KillListedUntilEmpty(dir_ + "/cgroup.procs", kDrainTimeout));
    return {};
  }

  Result<MemoryPeakReader> StartMemoryPeakWindow() const override {
    return usage_files_.StartMemoryPeakWindow();
  }

  SandboxUsage Usage() const override {
    SandboxUsage usage;
    usage.memory_bytes = ReadUint(dir_ + "/memory.current").value_or(0);
    // memory.peak is Linux >= 5.19.
    usage.memory_peak_bytes = ReadUint(dir_ + "/memory.peak").value_or(0);
    usage.pids = static_cast<uint32_t>(ReadUint(dir_ + "/pids.current").value_or(0));
    usage.oom_kills = OomKills();
    usage.cpu_seconds = CpuSeconds();
    return usage;
  }

  double CpuSeconds() const override { return usage_files_.CpuSeconds(); }

  uint64_t OomKills() const override { return usage_files_.OomKills(); }

  Status Destroy() override {
    if (destroyed_) return {};
    background_.reset();  // before its directory goes
    SBX_TRY(KillAll());
    // Killed tasks leave the group asynchronously; cgroup.events says when it is empty.
    auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto events = ReadFile(dir_ + "/cgroup.events");
      if (!events || FindKeyedValue(*events, "populated").value_or(0) == 0) break;
      std::this_thread::sleep_for(milliseconds(1));
    }
    dir_fd_.Reset();
    usage_files_.Close();
    SBX_TRY(RemoveCgroupDir(dir_, kDrainTimeout));
    destroyed_ = true;
    return {};
  }

  std::vector<std::string> paths() const override { return {dir_}; }

 private:
  std::string dir_;
  Fd dir_fd_;
  CgroupUsageFiles usage_files_;  // read around every run, open while the group lives
  bool destroyed_ = false;
  std::unique_ptr<BackgroundCpuGroup> background_;  // while at background priority
};

class Cgroup2Manager final : public CgroupManager {
 public:
  Cgroup2Manager(Cgroup2Setup setup, std::string reason)
      : setup_(std::move(setup)), reason_(std::move(reason)) {}

  std::string mode() const override { return "cgroup2"; }
  std::string reason() const override { return reason_; }

  EnforcedLimits Plan(const Limits& limits) const override {
    CgroupCapabilities caps;
    caps.mechanism = LimitMechanism::kCgroup2;
    caps.memory = true;
    caps.pids = true;
    caps.cpu = setup_.cpu;
    caps.swap = setup_.swap;
    if (!caps.swap) {
      caps.swap_note = HostHasSwap()
                           ? "memory.swap.max is absent (swap accounting off): sandboxes can swap"
                           : "memory.swap.max is absent (swap accounting off); this host has no "
                             "swap, so none can be used";
    }
    if (!caps.cpu) caps.cpu_note = "the cpu controller could not be enabled for session groups";
    EnforcedLimits plan = BuildPlan("cgroup2", limits, caps);
    plan.reason = reason_;
    return plan;
  }

  Result<std::unique_ptr<SandboxCgroup>> Create(const std::string& session_id,
                                                const Limits& limits) override {
    SBX_ASSIGN_OR_RETURN(std::string name, GroupNameFor(session_id));
    std::string dir = setup_.parent + "/" + name;
    int made = ::mkdir(dir.c_str(), 0755);
    if (made != 0 && errno == ENOENT) {
      // The parent went while this server had no session: a server of the same state dir
      // ended, or `sessions gc` ran, and removed it as unused. Made again, with the same
      // controllers for its children.
      if (::mkdir(setup_.parent.c_str(), 0755) == 0 || errno == EEXIST) {
        if (EnableControllers(setup_.parent)) made = ::mkdir(dir.c_str(), 0755);
      }
    }
    if (made != 0) {
      return Fail(SysError("mkdir", dir).Context("create the session cgroup"));
    }
    auto written = WriteLimits(dir, limits);
    if (!written) {
      (void)RemoveCgroupDir(dir, kDrainTimeout);
      return Fail(std::move(written.error()).Context("write cgroup v2 limits"));
    }
    Fd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) {
      int err = errno;
      (void)RemoveCgroupDir(dir, kDrainTimeout);
      return FailSys("open", dir, err);
    }
    return std::unique_ptr<SandboxCgroup>(std::make_unique<Cgroup2Group>(dir, std::move(fd)));
  }

  Result<int> SweepOrphans(const KeepGroup& keep) override {
    int swept = 0;
    for (const std::string& name : ListChildGroups(setup_.parent)) {
      if (name.rfind(layout::kSessionIdPrefix, 0) != 0 || keep(name)) continue;
      Cgroup2Group orphan(setup_.parent + "/" + name, Fd());
      SBX_TRY(orphan.Destroy().map_error(
          [&](Error e) { return std::move(e).Context("sweep orphan " + name); }));
      ++swept;
    }
    // A crashed server's scope holds the sandboxes of its own parent group, not ours.
    if (!setup_.systemd_scope.empty()) {
      SBX_ASSIGN_OR_RETURN(int scopes, SweepStaleScopes(setup_.owner, setup_.mount));
      swept += scopes;
    }
    return swept;
  }

  std::vector<std::string> parent_dirs() const override { return {setup_.parent}; }

 private:
  Status WriteLimits(const std::string& dir, const Limits& limits) const {
    SBX_TRY(WriteControl(dir + "/memory.max", std::to_string(limits.memory_bytes)));
    if (setup_.swap) SBX_TRY(WriteControl(dir + "/memory.swap.max", "0"));
    SBX_TRY(WriteControl(dir + "/pids.max", std::to_string(limits.pids)));
    if (setup_.cpu) {
      SBX_TRY(WriteControl(dir + "/cpu.max",
                           fmt::format("{} {}", CpuQuotaMicros(limits.cpus), kCpuPeriodMicros)));
    }
    // memory.oom.group stays 0 on purpose: on OOM the kernel kills the biggest task (the Python
    // worker), not the whole group, so the sandbox's init survives and restarts the worker.
    return {};
  }

  Cgroup2Setup setup_;
  std::string reason_;
};

}  // namespace

Result<Cgroup2Setup> PrepareCgroup2(const std::string& owner) {
  SBX_ASSIGN_OR_RETURN(V2Mount mount, FindV2Mount());
  SBX_ASSIGN_OR_RETURN(std::string root_controllers,
                       ReadControl(mount.point + "/cgroup.controllers"));
  if (root_controllers.empty()) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "cgroup2 at {} has no controllers (a hybrid host: they are bound to v1 "
                "hierarchies)",
                mount.point);
  }
  SBX_ASSIGN_OR_RETURN(auto entries, ReadProcCgroup());
  std::optional<std::string> own_path = V2PathOf(entries);
  if (!own_path) {
    return Fail(ErrorCode::kSandboxUnavailable, "/proc/self/cgroup has no cgroup v2 entry");
  }
  std::string own = DirOf(mount, *own_path);

  std::string root_failure;
  if (::geteuid() == 0) {
    auto setup = PrepareAt(mount, mount.point, owner, own == mount.point, false);
    if (setup) return setup;
    root_failure = setup.error().message;
  }

  // Unprivileged (or root without a writable root cgroup, e.g. in a container): our own cgroup,
  // if it is delegated to us. After a first Detect() we sit in <base>/server already.
  std::string base = own;
  if (Basename(own) == kServerLeaf && IsDelegatedToUs(Dirname(own))) base = Dirname(own);
  if (!IsDelegatedToUs(base)) {
    std::string why = fmt::format("own cgroup {} is not delegated to uid {} ({})", base,
                                  ::geteuid(), OwnerText(base));
    if (!root_failure.empty()) why = root_failure + "; " + why;
    return Fail(ErrorCode::kSandboxUnavailable, "{}", why);
  }
  return PrepareAt(mount, base, owner, base == own, true);
}

std::unique_ptr<CgroupManager> MakeCgroup2Manager(Cgroup2Setup setup, std::string reason) {
  return std::make_unique<Cgroup2Manager>(std::move(setup), std::move(reason));
}

}  // namespace sandbox::cgroup
