#include "runtime/docker/container_cgroup.h"

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup_fs.h"

namespace sandbox::docker {
namespace {

// The directory of `path` (a /proc/pid/cgroup path) under `mount`, or "" when outside it.
std::string DirUnder(const cgroup::CgroupMount& mount, std::string_view path) {
  if (mount.root == "/") return mount.mount_point + std::string(path);
  if (path.rfind(mount.root, 0) != 0) return "";
  return mount.mount_point + std::string(path.substr(mount.root.size()));
}

bool Has(const std::vector<std::string>& list, std::string_view item) {
  for (const auto& entry : list) {
    if (entry == item) return true;
  }
  return false;
}

uint64_t ReadNumber(const std::string& path) { return cgroup::ReadUint(path).value_or(0); }

// "key value" lines (memory.oom_control, memory.events, cpu.stat).
uint64_t ReadKeyed(const std::string& path, std::string_view key) {
  auto text = ReadFile(path);
  if (!text) return 0;
  return cgroup::FindKeyedValue(*text, key).value_or(0);
}

}  // namespace

std::optional<ContainerCgroupPaths> ResolveContainerCgroup(std::string_view proc_cgroup,
                                                           std::string_view mountinfo,
                                                           std::string_view container_id) {
  std::vector<cgroup::CgroupMount> mounts = cgroup::ParseCgroupMounts(mountinfo);
  std::vector<cgroup::ProcCgroupEntry> entries = cgroup::ParseProcCgroup(proc_cgroup);
  ContainerCgroupPaths paths;
  for (const auto& entry : entries) {
    for (const auto& mount : mounts) {
      if (mount.v2) continue;
      for (const auto& controller : entry.controllers) {
        if (!Has(mount.controllers, controller)) continue;
        std::string dir = DirUnder(mount, entry.path);
        if (controller == "memory") paths.memory = dir;
        if (controller == "pids") paths.pids = dir;
        if (controller == "cpuacct") paths.cpu = dir;
        if (controller == "cpu") paths.cpu_control = dir;
      }
    }
  }
  std::optional<std::string> v2_path = cgroup::V2PathOf(entries);
  if (paths.memory.empty() && v2_path) {
    for (const auto& mount : mounts) {
      if (!mount.v2) continue;
      std::string dir = DirUnder(mount, *v2_path);
      if (dir.empty()) continue;
      paths = {true, dir, dir, dir, dir};
      break;
    }
  }
  if (paths.memory.empty() || container_id.empty() ||
      paths.memory.find(container_id) == std::string::npos) {
    return std::nullopt;
  }
  return paths;
}

Result<ContainerCgroupPaths> FindContainerCgroup(pid_t pid, std::string_view container_id) {
  SBX_ASSIGN_OR_RETURN(std::string proc_cgroup, ReadFile(fmt::format("/proc/{}/cgroup", pid)));
  SBX_ASSIGN_OR_RETURN(std::string mountinfo, ReadFile("/proc/self/mountinfo"));
  auto paths = ResolveContainerCgroup(proc_cgroup, mountinfo, container_id);
  if (!paths) {
    return Fail(ErrorCode::kNotFound, "no cgroup of container {} visible from this host",
                container_id.substr(0, 12));
  }
  return *paths;
}

Result<ContainerCpuWeight> ReadContainerCpuWeight(const ContainerCgroupPaths& paths) {
  if (paths.cpu_control.empty()) {
    return Fail(ErrorCode::kNotFound, "no cpu controller for the container's cgroup");
  }
  ContainerCpuWeight weight;
  weight.file = paths.v2 ? "cpu.weight" : "cpu.shares";
  SBX_ASSIGN_OR_RETURN(weight.value, cgroup::ReadUint(paths.cpu_control + "/" + weight.file));
  return weight;
}

Status WriteContainerCpuShares(const ContainerCgroupPaths& paths, int64_t shares) {
  if (paths.v2) return Fail(ErrorCode::kNotFound, "cgroup v2: the daemon converts the shares");
  if (paths.cpu_control.empty()) {
    return Fail(ErrorCode::kNotFound, "no cpu controller for the container's cgroup");
  }
  return cgroup::WriteControl(paths.cpu_control + "/cpu.shares", std::to_string(shares));
}

uint64_t ReadContainerOomKills(const ContainerCgroupPaths& paths) {
  if (paths.v2) return ReadKeyed(paths.memory + "/memory.events", "oom_kill");
  return ReadKeyed(paths.memory + "/memory.oom_control", "oom_kill");  // >= 4.13
}

SandboxUsage ReadContainerUsage(const ContainerCgroupPaths& paths) {
  SandboxUsage usage;
  if (paths.v2) {
    usage.memory_bytes = ReadNumber(paths.memory + "/memory.current");
    usage.memory_peak_bytes = ReadNumber(paths.memory + "/memory.peak");  // Linux >= 5.19
    usage.oom_kills = ReadContainerOomKills(paths);
    usage.cpu_seconds = static_cast<double>(ReadKeyed(paths.cpu + "/cpu.stat", "usage_usec")) / 1e6;
  } else {
    usage.memory_bytes = ReadNumber(paths.memory + "/memory.usage_in_bytes");
    usage.memory_peak_bytes = ReadNumber(paths.memory + "/memory.max_usage_in_bytes");
    usage.oom_kills = ReadContainerOomKills(paths);
    if (!paths.cpu.empty()) {
      usage.cpu_seconds = static_cast<double>(ReadNumber(paths.cpu + "/cpuacct.usage")) / 1e9;
    }
  }
  if (!paths.pids.empty()) {
    usage.pids = static_cast<uint32_t>(ReadNumber(paths.pids + "/pids.current"));
  }
  return usage;
}

}  // namespace sandbox::docker
