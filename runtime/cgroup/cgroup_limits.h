// Resource limits for one sandbox through the best mechanism this host allows: cgroup v2 with a
// delegated subtree, cgroup v1 (root on v1/hybrid hosts), else rlimits only. What is in force is
// reported (EnforcedLimits), never silently weaker.
//
// Where the groups live (`owner` defaults to "mcp-sandbox"):
//   cgroup2, root:         <mount>/<owner>/sess_<id>
//   cgroup2, unprivileged: <own cgroup>/<owner>/sess_<id>, only when our own cgroup is delegated
//                          to us (systemd Delegate=yes, a test harness); we first move ourselves
//                          to the leaf <own cgroup>/server (cgroup v2 "no internal processes").
//   cgroup1, root only:    <controller mount>/<owner>/sess_<id> for memory, pids, cpu, cpuacct
//                          and freezer (freezer stops fork races while killing).
// SANDBOX_CGROUP=auto|cgroup2|cgroup1|none overrides the choice (auto is the default).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"
#include "runtime/cgroup/memory_peak.h"
#include "runtime/limits.h"

namespace sandbox {

// One session's cgroup(s). Destruction kills every process in it and removes it.
class SandboxCgroup {
 public:
  virtual ~SandboxCgroup() = default;
  // Moves `pid` in (before the child execs anything). v2 writes cgroup.procs; v1 each controller.
  virtual Status Attach(pid_t pid) = 0;
  // For clone3(CLONE_INTO_CGROUP): an O_PATH|O_DIRECTORY fd of the v2 cgroup, or -1.
  virtual int DirFd() const = 0;
  // v1: each hierarchy's `tasks` file, opened for writing, for the sandbox's first process to
  // join by itself (it writes "0" to each before it execs anything): the kernel moves a thread
  // that moves itself without the global threadgroup lock, whose writer waits for an RCU grace
  // period (5-17 ms here, per start) when the parent writes the pid to cgroup.procs instead.
  // Once handed out, the group counts as joined: a child that fails to join fails its start.
  // Empty where there is nothing to join this way (v2 uses DirFd or Attach; no cgroup at all).
  virtual Result<std::vector<Fd>> OpenSelfJoinFiles() { return std::vector<Fd>{}; }
  // Kills every process now (cgroup.kill on v2 >= 5.14, else SIGKILL to each pid listed).
  virtual Status KillAll() = 0;
  virtual SandboxUsage Usage() const = 0;
  // Usage().oom_kills from the one file that holds it.
  virtual uint64_t OomKills() const = 0;
  // Usage().cpu_seconds from the one file that holds it.
  virtual double CpuSeconds() const { return Usage().cpu_seconds; }
  // Kills every process, waits (briefly) for the group to drain and removes its directories.
  // Idempotent; the destructor calls it and logs a failure it cannot return.
  virtual Status Destroy() = 0;
  // kBackground: the group keeps its weight and is capped while foreground calls run
  // (background_cpu.h); kNormal: its own quota again. A no-op without a cpu controller.
  virtual Status SetCpuPriority(CpuPriority /*priority*/) { return {}; }
  // Resets the memory high-water mark for one call (memory_peak.h); fails where the kernel
  // cannot.
  virtual Result<MemoryPeakReader> StartMemoryPeakWindow() const {
    return Fail(ErrorCode::kNotFound, "no memory cgroup");
  }
  // The group's directory (v2) or directories (v1, one per hierarchy), for logs and records.
  virtual std::vector<std::string> paths() const = 0;
};

// An rlimit a child applies with setrlimit() between clone and exec (plain data).
struct RlimitSetting {
  int resource;
  rlim_t soft;
  rlim_t hard;
};

inline constexpr const char* kDefaultCgroupOwner = "mcp-sandbox";

// The name of the cgroup parent group of the sessions of servers using `state_dir`:
// "mcp-sandbox" for the system's state dir (/var/lib/mcp-sandbox, or none given), else
// "mcp-sandbox-" and a hash of the path. Servers
// sweep the groups under their parent that their state dir has no record of (a crash's
// leftovers), so servers with different state dirs must not share a parent.
std::string CgroupOwnerFor(const std::string& state_dir);

class CgroupManager {
 public:
  virtual ~CgroupManager() = default;
  // Probes the host for real and picks cgroup2, cgroup1 or none. `owner` names the parent
  // group ("mcp-sandbox"). Never fails: "none" is a valid answer with a reason. As root (or
  // with a delegated cgroup) this creates the parent group and enables controllers in it.
  static std::unique_ptr<CgroupManager> Detect(const std::string& owner = kDefaultCgroupOwner);
  // Detect() for servers: fails (naming SANDBOX_CGROUP) when the variable has a bad value or
  // asks for a mode this host cannot give, instead of answering "none".
  static Result<std::unique_ptr<CgroupManager>> Open(
      const std::string& owner = kDefaultCgroupOwner);

  virtual std::string mode() const = 0;    // "cgroup2" | "cgroup1" | "none"
  virtual std::string reason() const = 0;  // why this mode (for doctor and logs)
  virtual EnforcedLimits Plan(const Limits& limits) const = 0;
  // Creates the session's cgroup with the limits written. Returns nullptr-free error on failure.
  // In mode "none" it returns a group that enforces nothing (DirFd() -1, Attach a no-op).
  virtual Result<std::unique_ptr<SandboxCgroup>> Create(const std::string& session_id,
                                                        const Limits& limits) = 0;
  // Whether the session group `name` (a session id) is still someone's; asked once per group.
  using KeepGroup = std::function<bool(const std::string& name)>;
  // Removes the session groups `keep` refuses (a crashed server's); returns the count. Processes
  // still in them are killed first. The groups are listed before `keep` is asked, so a group
  // made after the listing is never a candidate, and `keep` may rely on state its owner wrote
  // before making the group (the namespace backend's session record). Every server sharing the
  // parent group must keep its own (use a distinct `owner` per independent server).
  virtual Result<int> SweepOrphans(const KeepGroup& keep) = 0;
  // The parent directories the session groups are created in (empty in mode "none").
  virtual std::vector<std::string> parent_dirs() const = 0;
};

// The rlimits every sandbox gets (CORE 0, FSIZE, NOFILE, NPROC where safe, AS when no memory
// cgroup is available), computed from the limits and whether a memory cgroup is in force.
// NPROC: since Linux 5.14 RLIMIT_NPROC is counted per (user namespace, uid), so it limits one
// sandbox when each sandbox has its own user namespace; on older kernels it is only set when
// the server is root (each session then has its own host uid).
std::vector<RlimitSetting> RlimitsFor(const Limits& limits, bool memory_cgroup_in_force);

// The name of an rlimit resource as the OCI spec and error messages spell it ("RLIMIT_NPROC"),
// or nullptr for one RlimitsFor never sets.
const char* RlimitName(int resource);

// True when RlimitsFor() includes RLIMIT_NPROC (see above).
bool NprocRlimitIsPerSandbox();

}  // namespace sandbox
