#include "runtime/docker/docker_limits.h"

#include <fmt/format.h>

#include "runtime/base/units.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::docker {
namespace {

EnforcedLimit Enforced(const char* name, std::string value) {
  return {name, LimitMechanism::kDocker, std::move(value), ""};
}

EnforcedLimit NotEnforced(const char* name, std::string note) {
  return {name, LimitMechanism::kNone, "unlimited", std::move(note)};
}

int64_t IntField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

EnforcedLimit* Find(EnforcedLimits& limits, std::string_view name) {
  for (auto& limit : limits.limits) {
    if (limit.name == name) return &limit;
  }
  return nullptr;
}

}  // namespace

EnforcedLimits PlanDockerLimits(const Limits& limits, const DaemonInfo& daemon) {
  EnforcedLimits plan;
  plan.cgroup_mode = "docker";
  plan.reason = "the Docker daemon enforces these through the container's HostConfig";
  auto& out = plan.limits;
  out.push_back(daemon.memory_limit
                    ? Enforced("memory", FormatBytes(limits.memory_bytes))
                    : NotEnforced("memory", "the Docker daemon reports no memory cgroup"));
  out.push_back(daemon.swap_limit
                    ? Enforced("swap", "0B")
                    : NotEnforced("swap",
                                  "the Docker daemon reports no swap accounting (boot with "
                                  "swapaccount=1 or use cgroup v2): swap is not capped"));
  if (limits.cpus <= 0) {
    out.push_back(NotEnforced("cpu", "no cpu limit requested"));
  } else {
    out.push_back(daemon.cpu_cfs_quota
                      ? Enforced("cpu", fmt::format("{:.2g} cpu", limits.cpus))
                      : NotEnforced("cpu", "the Docker daemon reports no CFS quota support"));
  }
  out.push_back(daemon.pids_limit
                    ? Enforced("pids", std::to_string(limits.pids))
                    : NotEnforced("pids", "the Docker daemon reports no pids cgroup"));
  out.push_back(Enforced("disk", FormatBytes(limits.disk_bytes) + " tmpfs at " + layout::kDataDir));
  out.push_back(Enforced("tmp", FormatBytes(limits.tmp_bytes) + " tmpfs at " + layout::kTmpDir));
  out.push_back(Enforced("open_files", std::to_string(limits.open_files)));
  out.push_back(Enforced("file_size", FormatBytes(limits.file_size_bytes)));
  return plan;
}

EnforcedLimits CorrectFromHostConfig(EnforcedLimits planned, const nlohmann::json& host_config) {
  if (!host_config.is_object()) return planned;
  int64_t memory = IntField(host_config, "Memory");
  int64_t swap = IntField(host_config, "MemorySwap");
  if (auto* limit = Find(planned, "memory"); limit && memory <= 0) {
    *limit = NotEnforced("memory", "the Docker daemon did not set a memory limit");
  }
  // MemorySwap == Memory means no swap; -1 (or 0 with no Memory) means the daemon dropped it.
  if (auto* limit = Find(planned, "swap"); limit && (memory <= 0 || swap != memory)) {
    *limit = NotEnforced("swap", fmt::format("the Docker daemon set MemorySwap={} (Memory={}): "
                                             "swap is not capped",
                                             swap, memory));
  }
  if (auto* limit = Find(planned, "pids"); limit && IntField(host_config, "PidsLimit") <= 0) {
    *limit = NotEnforced("pids", "the Docker daemon did not set a pids limit");
  }
  if (auto* limit = Find(planned, "cpu"); limit && limit->mechanism == LimitMechanism::kDocker &&
                                          IntField(host_config, "NanoCpus") <= 0) {
    *limit = NotEnforced("cpu", "the Docker daemon did not set a cpu limit");
  }
  return planned;
}

}  // namespace sandbox::docker
