#include "runtime/docker/container_spec.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/agent/agent_env.h"
#include "runtime/docker/daemon_runtime.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::docker {
namespace {

// Under runsc the container's cgroup holds gVisor's Sentry and Gofer beside the guest: at the
// cgroup's memory or pids limit the host kills the Sentry, i.e. the whole sandbox. So the cgroup
// gets room for them (as the gVisor backend's host cgroup does: runtime/gvisor) and the guest is
// held by the Sentry's own rlimits (RLIMIT_AS per process, RLIMIT_NPROC), so a greedy cell gets
// MemoryError or EAGAIN and the session lives on.
constexpr uint64_t kSentryMemoryBytes = 64ull << 20;
// As runtime/gvisor's HostPidsFor: under ptrace a fork bomb at the guest's limit needed more
// than 4x as many (the pids controller refused the Sentry a thread and the sandbox ended).
uint64_t SentryPidsFor(uint64_t guest_pids) { return std::max<uint64_t>(4096, guest_pids * 32); }

// A session id that can name a container: up to the longest id (a 63-character replica id).
bool IsNameSafe(const std::string& text) {
  if (text.empty() || text.size() > layout::kMaxSessionIdLength) return false;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Options of a tmpfs mount (tmpfs(5)). Docker's defaults would add noexec; Python packages
// installed or built under /tmp need exec, and the rootfs stays read-only anyway.
std::string TmpfsOptions(uint64_t size_bytes, const std::string& ownership) {
  return fmt::format("rw,exec,nosuid,nodev,size={},{}", size_bytes, ownership);
}

// Per-process caps on two kernel counters that are charged to the real uid. Without
// userns-remap every container's uid 1000 is the host's uid 1000, so these counters are shared
// by all Docker sandboxes (and any host user 1000); the rlimit bounds how far a sandbox can push
// that shared count, so it cannot starve the host user of signals or message queues. Queued
// signals: a Python program rarely has more than a few pending. Message queues: the kernel's
// default (819200 bytes), said explicitly so a daemon started with higher limits cannot lift it.
constexpr uint64_t kSigpendingLimit = 1024;
constexpr uint64_t kMsgqueueLimitBytes = 819200;

nlohmann::json Ulimit(const char* name, uint64_t value) {
  return {{"Name", name}, {"Soft", value}, {"Hard", value}};
}

// What /proc and /sys hide, said explicitly instead of left to the daemon: its defaults depend on
// its version (Docker 20.10 still shows /proc/interrupts, GHSA-6fw5-f8r9-fgfm), and the
// namespace backend masks the same /proc paths (runtime/ns/proc_masks.cc). powercap: the RAPL
// energy counters are a side channel on other tenants' work (CVE-2020-8694).
const nlohmann::json& MaskedPaths() {
  static const nlohmann::json paths = {
      "/proc/acpi",        "/proc/asound",  "/proc/interrupts",
      "/proc/kcore",       "/proc/keys",    "/proc/latency_stats",
      "/proc/sched_debug", "/proc/scsi",    "/proc/timer_list",
      "/proc/timer_stats", "/sys/firmware", "/sys/devices/virtual/powercap",
  };
  return paths;
}

const nlohmann::json& ReadonlyPaths() {
  static const nlohmann::json paths = {
      "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
  };
  return paths;
}

}  // namespace

std::string ContainerNameFor(const std::string& session_id) { return "mcp-sandbox-" + session_id; }

int64_t CpuSharesFor(CpuPriority /*priority*/) { return 1024; }

Result<ContainerSpec> ContainerSpecFor(const SandboxSpec& spec, const std::string& image,
                                       const ContainerOwner& owner,
                                       const std::string& seccomp_profile_json) {
  if (!IsNameSafe(spec.session_id)) {
    return Fail(ErrorCode::kInvalidArgument, "session id '{}' cannot name a container",
                spec.session_id);
  }
  if (image.empty()) return Fail(ErrorCode::kInvalidArgument, "no Docker image given");
  if (spec.agent_dir.empty() || spec.agent_dir[0] != '/') {
    return Fail(ErrorCode::kInvalidArgument, "agent dir '{}' is not an absolute path",
                spec.agent_dir);
  }
  if (!spec.wheelhouse.empty() && spec.wheelhouse[0] != '/') {
    return Fail(ErrorCode::kInvalidArgument, "wheelhouse '{}' is not an absolute path",
                spec.wheelhouse);
  }
  ContainerSpec container;
  container.name = ContainerNameFor(spec.session_id);
  container.image = image;
  container.command = {kAgentInit};
  container.env = spec.env;
  container.working_dir = spec.workdir.empty() ? layout::kDataDir : spec.workdir;
  container.labels = {{kSessionLabel, spec.session_id},
                      {kOwnerLabel, owner.process},
                      {kHostLabel, owner.host},
                      {kImageLabel, spec.image_name.empty() ? image : spec.image_name}};
  if (!owner.replica.empty()) container.labels[kReplicaLabel] = owner.replica;
  container.binds.push_back({spec.agent_dir, kAgentMountPoint, true});
  if (!spec.wheelhouse.empty()) {
    container.binds.push_back({spec.wheelhouse, kWheelhouseMountPoint, true});
  }
  if (!spec.egress_socket_path.empty()) {
    if (spec.egress_socket_path[0] != '/') {
      return Fail(ErrorCode::kInvalidArgument, "egress socket '{}' is not an absolute path",
                  spec.egress_socket_path);
    }
    container.binds.push_back({spec.egress_socket_path, kEgressSocketMountPoint, true});
    container.env.push_back(std::string(agent_env::kEgressSocket) + "=" + kEgressSocketMountPoint);
  }
  container.limits = spec.limits;
  container.cpu_shares = CpuSharesFor(spec.cpu_priority);
  container.seccomp_profile_json = seccomp_profile_json;
  return container;
}

nlohmann::json CreateContainerBody(const ContainerSpec& spec) {
  const Limits& limits = spec.limits;
  nlohmann::json mounts = nlohmann::json::array();
  for (const BindMount& bind : spec.binds) {
    mounts.push_back({{"Type", "bind"},
                      {"Source", bind.source},
                      {"Target", bind.target},
                      {"ReadOnly", bind.read_only},
                      {"BindOptions", {{"Propagation", "rprivate"}}}});
  }
  nlohmann::json security_opt = nlohmann::json::array({"no-new-privileges:true"});
  if (!spec.seccomp_profile_json.empty()) {
    security_opt.push_back("seccomp=" + spec.seccomp_profile_json);
  }
  nlohmann::json host_config = {
      {"NetworkMode", "none"},
      {"CapDrop", {"ALL"}},
      {"CapAdd", nlohmann::json::array()},
      {"Privileged", false},
      {"MaskedPaths", MaskedPaths()},
      {"ReadonlyPaths", ReadonlyPaths()},
      {"ReadonlyRootfs", true},
      {"SecurityOpt", security_opt},
      {"Memory", limits.memory_bytes},
      // MemorySwap is memory plus swap: equal to Memory means no swap at all.
      {"MemorySwap", limits.memory_bytes},
      {"PidsLimit", limits.pids},
      {"Ulimits",
       {Ulimit("core", 0), Ulimit("nofile", limits.open_files),
        Ulimit("fsize", limits.file_size_bytes), Ulimit("sigpending", kSigpendingLimit),
        Ulimit("msgqueue", kMsgqueueLimitBytes)}},
      {"Tmpfs",
       {{layout::kTmpDir, TmpfsOptions(limits.tmp_bytes, "mode=1777")},
        {layout::kDataDir,
         TmpfsOptions(limits.disk_bytes, fmt::format("mode=0755,uid={},gid={}", layout::kSandboxUid,
                                                     layout::kSandboxGid))}}},
      {"Mounts", mounts},
      // sandbox-init itself is pid 1 (no docker-init in front of it), as in the namespace
      // backend: it reaps every orphan, and kill(-1, SIGKILL) from sandbox code, which reaches
      // every process of the container but its pid 1, then cannot end the session.
      {"Init", false},
      {"IpcMode", "private"},
      {"CgroupnsMode", "private"},
      {"AutoRemove", false},  // removed explicitly, so a crash leaves it for the sweep to find
      {"RestartPolicy", {{"Name", "no"}}},
  };
  if (spec.cpu_shares > 0) host_config["CpuShares"] = spec.cpu_shares;
  if (!spec.runtime.empty()) host_config["Runtime"] = spec.runtime;
  if (IsRunscRuntime(spec.runtime)) {
    const uint64_t with_sentry = limits.memory_bytes + kSentryMemoryBytes;
    host_config["Memory"] = with_sentry;
    host_config["MemorySwap"] = with_sentry;
    host_config["PidsLimit"] = SentryPidsFor(limits.pids);
    host_config["Ulimits"].push_back(Ulimit("as", limits.memory_bytes));
    host_config["Ulimits"].push_back(Ulimit("nproc", limits.pids));
  }
  if (limits.cpus > 0) {
    host_config["NanoCpus"] = static_cast<int64_t>(std::llround(limits.cpus * 1e9));
  }
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [key, value] : spec.labels) labels[key] = value;
  return {
      {"Image", spec.image},
      // The whole argv as Entrypoint (and no Cmd), so an image ENTRYPOINT cannot wrap it.
      {"Entrypoint", spec.command},
      {"Cmd", nlohmann::json::array()},
      {"Env", spec.env},
      {"WorkingDir", spec.working_dir},
      {"User", spec.user},
      {"Hostname", spec.hostname},
      {"Labels", labels},
      {"Tty", false},
      // The agent's protocol runs over stdin/stdout of the attach connection. StdinOnce closes
      // the container's stdin when that connection closes, so the agent sees EOF when the
      // server goes away (ByteStream::CloseWrite, or a crash) instead of running on unseen.
      {"OpenStdin", true},
      {"StdinOnce", true},
      {"AttachStdin", true},
      {"AttachStdout", true},
      {"AttachStderr", true},
      {"NetworkDisabled", true},
      {"HostConfig", host_config},
  };
}

}  // namespace sandbox::docker
