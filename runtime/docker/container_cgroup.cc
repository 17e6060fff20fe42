#include "runtime/docker/container_cgroup.h"

#include <vector>

#include "runtime/base/files.h"

namespace sandbox::docker {
namespace {

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

struct Mount {
  std::string root;
  std::string mount_point;
  bool v2 = false;
  std::vector<std::string> controllers;
};

// proc(5), /proc/pid/mountinfo: "id parent maj:min root mountpoint opts [optional...] - fstype
// source superopts". Mount points escape spaces as \040; cgroup mounts have none in practice.
std::vector<Mount> CgroupMounts(std::string_view mountinfo) {
  std::vector<Mount> mounts;
  for (std::string_view line : Split(mountinfo, '\n')) {
    std::vector<std::string_view> fields = Split(line, ' ');
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 > fields.size()) continue;
    std::string_view fstype = fields[dash + 1];
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    Mount mount{std::string(fields[3]), std::string(fields[4]), fstype == "cgroup2", {}};
    if (!mount.v2) {
      for (std::string_view option : Split(fields[dash + 3], ',')) {
        mount.controllers.emplace_back(option);
      }
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

// The directory of `path` (a /proc/pid/cgroup path) under `mount`, or "" when outside it.
std::string DirUnder(const Mount& mount, std::string_view path) {
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

uint64_t ReadNumber(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return 0;
  return std::strtoull(text->c_str(), nullptr, 10);
}

// "key value" lines (memory.oom_control, memory.events, cpu.stat).
uint64_t ReadKeyed(const std::string& path, std::string_view key) {
  auto text = ReadFile(path);
  if (!text) return 0;
  for (std::string_view line : Split(*text, '\n')) {
    if (line.size() > key.size() && line.rfind(key, 0) == 0 && line[key.size()] == ' ') {
      return std::strtoull(std::string(line.substr(key.size() + 1)).c_str(), nullptr, 10);
    }
  }
  return 0;
}

}  // namespace

std::optional<ContainerCgroupPaths> ResolveContainerCgroup(std::string_view proc_cgroup,
                                                           std::string_view mountinfo,
                                                           std::string_view container_id) {
  std::vector<Mount> mounts = CgroupMounts(mountinfo);
  ContainerCgroupPaths paths;
  std::string v2_path;
  // "hierarchy-id:controller,list:path"; the v2 line is "0::path".
  for (std::string_view line : Split(proc_cgroup, '\n')) {
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = line.substr(second + 1);
    if (controllers.empty()) {
      v2_path = std::string(path);
      continue;
    }
    for (const Mount& mount : mounts) {
      if (mount.v2) continue;
      for (std::string_view controller : Split(controllers, ',')) {
        if (!Has(mount.controllers, controller)) continue;
        std::string dir = DirUnder(mount, path);
        if (controller == "memory") paths.memory = dir;
        if (controller == "pids") paths.pids = dir;
        if (controller == "cpuacct") paths.cpu = dir;
      }
    }
  }
  if (paths.memory.empty() && !v2_path.empty()) {
    for (const Mount& mount : mounts) {
      if (!mount.v2) continue;
      std::string dir = DirUnder(mount, v2_path);
      if (dir.empty()) continue;
      paths = {true, dir, dir, dir};
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

SandboxUsage ReadContainerUsage(const ContainerCgroupPaths& paths) {
  SandboxUsage usage;
  if (paths.v2) {
    usage.memory_bytes = ReadNumber(paths.memory + "/memory.current");
    usage.memory_peak_bytes = ReadNumber(paths.memory + "/memory.peak");  // Linux >= 5.19
    usage.oom_kills = ReadKeyed(paths.memory + "/memory.events", "oom_kill");
    usage.cpu_seconds = static_cast<double>(ReadKeyed(paths.cpu + "/cpu.stat", "usage_usec")) / 1e6;
  } else {
    usage.memory_bytes = ReadNumber(paths.memory + "/memory.usage_in_bytes");
    usage.memory_peak_bytes = ReadNumber(paths.memory + "/memory.max_usage_in_bytes");
    usage.oom_kills = ReadKeyed(paths.memory + "/memory.oom_control", "oom_kill");  // >= 4.13
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
