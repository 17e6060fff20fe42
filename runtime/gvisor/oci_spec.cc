#include "runtime/gvisor/oci_spec.h"

#include <sys/resource.h>

#include <algorithm>

#include <fmt/format.h>

#include "runtime/agent/agent_env.h"
#include "runtime/gvisor/egress_bridge.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::gvisor {
namespace {

// Options of a tmpfs as the Docker backend gives it: exec, so packages built under /tmp run.
// runsc takes one option per entry ("mode=1777", not "mode=1777,uid=0").
nlohmann::json Tmpfs(const char* target, uint64_t size_bytes,
                     std::initializer_list<std::string> ownership) {
  nlohmann::json options = {"nosuid", "nodev", fmt::format("size={}", size_bytes)};
  for (const std::string& option : ownership) options.push_back(option);
  return {{"destination", target}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", options}};
}

nlohmann::json ReadOnlyBind(const std::string& source, const char* target) {
  return {{"destination", target},
          {"type", "bind"},
          {"source", source},
          {"options", {"bind", "ro", "nosuid", "nodev"}}};
}

}  // namespace

std::vector<RlimitSetting> SentryRlimits(const Limits& limits) {
  // RLIMIT_AS always: a memory cgroup holds the Sentry, and at its limit kills the whole
  // sandbox; the rlimit makes one greedy process fail (MemoryError) and the session live on.
  std::vector<RlimitSetting> rlimits = RlimitsFor(limits, /*memory_cgroup_in_force=*/false);
  std::erase_if(rlimits, [](const RlimitSetting& r) { return r.resource == RLIMIT_NPROC; });
  rlimits.push_back({RLIMIT_NPROC, limits.pids, limits.pids});
  return rlimits;
}

nlohmann::json OciSpecFor(const OciInputs& inputs) {
  const Limits& limits = inputs.limits;
  nlohmann::json rlimits = nlohmann::json::array();
  for (const RlimitSetting& r : SentryRlimits(limits)) {
    if (const char* name = RlimitName(r.resource)) {
      rlimits.push_back({{"type", name}, {"soft", r.soft}, {"hard", r.hard}});
    }
  }
  std::vector<std::string> env = inputs.env;
  if (!inputs.egress_dir.empty()) {
    env.push_back(fmt::format("{}={}/{}", agent_env::kEgressConnect, layout::kGvisorEgressDir,
                              kEgressSocketName));
  }
  nlohmann::json no_caps = nlohmann::json::array();
  nlohmann::json process = {
      {"terminal", false},
      {"user", {{"uid", layout::kSandboxUid}, {"gid", layout::kSandboxGid}}},
      {"args", inputs.argv},
      {"env", env},
      {"cwd", inputs.workdir.empty() ? std::string(layout::kDataDir) : inputs.workdir},
      {"capabilities",
       {{"bounding", no_caps},
        {"effective", no_caps},
        {"inheritable", no_caps},
        {"permitted", no_caps},
        {"ambient", no_caps}}},
      {"noNewPrivileges", true},
      {"rlimits", rlimits},
  };
  nlohmann::json mounts = nlohmann::json::array();
  mounts.push_back({{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}});
  mounts.push_back(Tmpfs(layout::kTmpDir, limits.tmp_bytes, {"mode=1777"}));
  mounts.push_back(Tmpfs(layout::kDataDir, limits.disk_bytes,
                         {"mode=0755", fmt::format("uid={}", layout::kSandboxUid),
                          fmt::format("gid={}", layout::kSandboxGid)}));
  // gVisor's own /dev/shm is root's: multiprocessing and shared_memory need one the user owns.
  mounts.push_back(Tmpfs("/dev/shm", limits.tmp_bytes, {"mode=1777"}));
  mounts.push_back(ReadOnlyBind(inputs.agent_dir, layout::kAgentDir));
  if (!inputs.wheelhouse.empty()) {
    mounts.push_back(ReadOnlyBind(inputs.wheelhouse, layout::kWheelhouseDir));
  }
  if (!inputs.egress_dir.empty()) {
    mounts.push_back(ReadOnlyBind(inputs.egress_dir, layout::kGvisorEgressDir));
  }
  nlohmann::json linux = {{"namespaces",
                           {{{"type", "pid"}},
                            {{"type", "network"}},
                            {{"type", "ipc"}},
                            {{"type", "uts"}},
                            {{"type", "mount"}}}}};
  if (!inputs.seccomp.is_null()) linux["seccomp"] = inputs.seccomp;
  return {
      {"ociVersion", "1.0.2"},
      {"process", process},
      {"root", {{"path", inputs.rootfs}, {"readonly", true}}},
      {"hostname", "sandbox"},
      {"mounts", mounts},
      {"linux", linux},
  };
}

std::vector<std::string> MountPointsIn(const OciInputs& inputs) {
  auto relative = [](const char* path) { return std::string(path + 1); };
  std::vector<std::string> points = {relative(layout::kTmpDir), relative(layout::kDataDir),
                                     relative(layout::kAgentDir)};
  if (!inputs.wheelhouse.empty()) points.push_back(relative(layout::kWheelhouseDir));
  if (!inputs.egress_dir.empty()) points.push_back(relative(layout::kGvisorEgressDir));
  return points;
}

}  // namespace sandbox::gvisor
