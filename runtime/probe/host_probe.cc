#include "runtime/probe/host_probe.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/base/result.h"
#include "runtime/base/units.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/docker/engine_client.h"
#include "runtime/docker/unix_http.h"

namespace sandbox::probe {
namespace {

// What a probe child reports when a step fails: {step index, errno}. Nothing on success.
struct ChildFailure {
  int step;
  int err;
};

// Child side (after fork, async-signal-safe only): report and leave.
[[noreturn]] void ChildFail(int report_fd, int step) {
  ChildFailure failure{step, errno};
  ssize_t ignored = ::write(report_fd, &failure, sizeof failure);
  (void)ignored;
  ::_exit(1);
}

// Child side: open + one write + close, keeping errno of the failing call.
bool ChildWriteFile(const char* path, const char* data, size_t size) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::write(fd, data, size);
  int err = errno;
  ::close(fd);
  errno = err;
  return n == static_cast<ssize_t>(size);
}

// Runs `child(report_fd)` in a forked child and collects a ChildFailure, if any.
// Parent side. Returns false with *failure set when the child reported a failed step.
template <typename ChildFn>
bool RunProbeChild(ChildFn child, ChildFailure* failure, std::string* fork_error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *fork_error = SysError("pipe2").message;
    return false;
  }
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) {
    *fork_error = SysError("fork").message;
    return false;
  }
  if (pid == 0) {
    child(write_end.get());
    ::_exit(0);
  }
  write_end.Reset();
  ChildFailure report{-1, 0};
  ssize_t n;
  do {
    n = ::read(read_end.get(), &report, sizeof report);
  } while (n < 0 && errno == EINTR);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof report)) {
    *failure = report;
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *fork_error = WIFSIGNALED(status)
                      ? fmt::format("probe child killed by signal {}", WTERMSIG(status))
                      : fmt::format("probe child exited {}", WEXITSTATUS(status));
    return false;
  }
  return true;
}

std::string ReadSysctl(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return "";
  std::string value = *text;
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  return value;
}

// ---- user namespaces ----

enum UsernsStep {
  kUnshareUser,
  kWriteUidMap,
  kWriteSetgroups,
  kWriteGidMap,
  kUnshareMount,
  kMakePrivate,
  kMountTmpfs,
};
constexpr const char* kUsernsStepNames[] = {
    "unshare(CLONE_NEWUSER)",
    "write /proc/self/uid_map",
    "write /proc/self/setgroups",
    "write /proc/self/gid_map",
    "unshare(CLONE_NEWNS)",
    "make / private (MS_REC|MS_PRIVATE)",
    "mount tmpfs",
};

std::string ExplainUsernsFailure(const UsernsProbe& probe, int step) {
  auto sysctl = [&](const std::string& name) -> std::string {
    for (const auto& [key, value] : probe.sysctls) {
      if (key == name) return value;
    }
    return "";
  };
  int err = probe.sys_errno;
  bool root = ::geteuid() == 0;
  if (step == kUnshareUser) {
    if (err == ENOSPC) {
      return "the user namespace limit is reached (user.max_user_namespaces=" +
             sysctl("user.max_user_namespaces") +
             " in this namespace): raise it, e.g. sysctl -w user.max_user_namespaces=15000";
    }
    if (err == EPERM && !root && sysctl("kernel.unprivileged_userns_clone") == "0") {
      return "kernel.unprivileged_userns_clone=0 forbids user namespaces to unprivileged users: "
             "sysctl -w kernel.unprivileged_userns_clone=1, run as root, or use "
             "SANDBOX_BACKEND=docker";
    }
    if (err == EPERM) {
      return "unshare(CLONE_NEWUSER) is refused: typically a container's seccomp profile, a "
             "chroot, or a security module; use SANDBOX_BACKEND=docker or allow user namespaces";
    }
    if (err == EINVAL) return "the kernel lacks user namespaces (CONFIG_USER_NS)";
    if (err == EUSERS) return "too deeply nested user namespaces (32 levels)";
  }
  if ((err == EPERM || err == EACCES) &&
      sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1") {
    return "AppArmor restricts unprivileged user namespaces "
           "(kernel.apparmor_restrict_unprivileged_userns=1): the namespace is created without "
           "capabilities. Set the sysctl to 0, or give mcp-sandbox an AppArmor profile with the "
           "'userns,' rule";
  }
  if (step == kMountTmpfs || step == kMakePrivate) {
    return "mounting inside a user namespace is refused (a security module policy?)";
  }
  return "";
}

// ---- seccomp ----

enum SeccompStep { kNoNewPrivs, kInstallFilter, kFilterNotEnforced };
constexpr const char* kSeccompStepNames[] = {
    "prctl(PR_SET_NO_NEW_PRIVS)",
    "seccomp(SECCOMP_SET_MODE_FILTER)",
    "filter installed but getppid() was not denied",
};
// An errno nothing else returns from getppid(), to tell our filter's answer apart.
constexpr int kProbeErrno = EXDEV;

#if defined(__x86_64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "add this architecture's AUDIT_ARCH_ value"
#endif

}  // namespace

UsernsProbe ProbeUserNamespaces() {
  UsernsProbe probe;
  for (const char* name : {"kernel.apparmor_restrict_unprivileged_userns",
                           "user.max_user_namespaces", "kernel.unprivileged_userns_clone"}) {
    std::string path = "/proc/sys/" + std::string(name);
    std::replace(path.begin() + 10, path.end(), '.', '/');
    if (cgroup::PathExists(path)) probe.sysctls.emplace_back(name, ReadSysctl(path));
  }
  // Everything the child writes is formatted before fork (no allocation after it).
  std::string uid_map = fmt::format("0 {} 1\n", ::geteuid());
  std::string gid_map = fmt::format("0 {} 1\n", ::getegid());
  ChildFailure failure{};
  std::string fork_error;
  bool ok = RunProbeChild(
      [&](int report) {
        if (::unshare(CLONE_NEWUSER) != 0) ChildFail(report, kUnshareUser);
        if (!ChildWriteFile("/proc/self/uid_map", uid_map.data(), uid_map.size())) {
          ChildFail(report, kWriteUidMap);
        }
        // Required before an unprivileged gid_map write (user_namespaces(7)); absent < 3.19.
        if (!ChildWriteFile("/proc/self/setgroups", "deny", 4) && errno != ENOENT) {
          ChildFail(report, kWriteSetgroups);
        }
        if (!ChildWriteFile("/proc/self/gid_map", gid_map.data(), gid_map.size())) {
          ChildFail(report, kWriteGidMap);
        }
        if (::unshare(CLONE_NEWNS) != 0) ChildFail(report, kUnshareMount);
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
          ChildFail(report, kMakePrivate);
        }
        const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
        if (::mount("sbx-probe", "/tmp", "tmpfs", flags, "size=16k") != 0 &&
            ::mount("sbx-probe", "/", "tmpfs", flags, "size=16k") != 0) {
          ChildFail(report, kMountTmpfs);
        }
      },
      &failure, &fork_error);
  if (ok) {
    probe.ok = true;
    probe.detail =
        "a child created a user namespace, wrote its uid/gid maps and mounted a tmpfs in a new "
        "mount namespace";
    return probe;
  }
  if (!fork_error.empty()) {
    probe.failed_step = "fork";
    probe.detail = fork_error;
    return probe;
  }
  int step = std::clamp(failure.step, 0, static_cast<int>(kMountTmpfs));
  probe.failed_step = kUsernsStepNames[step];
  probe.sys_errno = failure.err;
  probe.detail = fmt::format("{} failed: {} ({})", probe.failed_step, ErrnoName(failure.err),
                             std::strerror(failure.err));
  probe.explanation = ExplainUsernsFailure(probe, step);
  return probe;
}

SeccompProbe ProbeSeccomp() {
  SeccompProbe probe;
  // "Seccomp:\t2" (mode) and "Seccomp_filters:\t1" (Linux >= 5.9) in /proc/self/status.
  if (auto status = ReadFile("/proc/self/status")) {
    auto field = [&](const char* name) {
      size_t at = status->find(std::string("\n") + name + ":");
      return at == std::string::npos ? 0 : std::atoi(status->c_str() + at + std::strlen(name) + 2);
    };
    probe.mode_now = field("Seccomp");
    probe.filters_now = field("Seccomp_filters");
  }
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (kProbeErrno & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program {};
  program.len = static_cast<unsigned short>(sizeof filter / sizeof filter[0]);
  program.filter = filter;
  ChildFailure failure{};
  std::string fork_error;
  bool ok = RunProbeChild(
      [&](int report) {
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail(report, kNoNewPrivs);
        if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
          if (errno != ENOSYS || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
            ChildFail(report, kInstallFilter);
          }
        }
        errno = 0;
        if (::syscall(SYS_getppid) != -1 || errno != kProbeErrno) {
          ChildFail(report, kFilterNotEnforced);
        }
      },
      &failure, &fork_error);
  uint32_t kill_process = SECCOMP_RET_KILL_PROCESS;
  bool kill_process_ok = ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &kill_process) == 0;
  std::string now =
      probe.mode_now == 2
          ? fmt::format("; this process already runs under {} filter(s)", probe.filters_now)
          : "";
  if (ok) {
    probe.ok = true;
    probe.detail =
        fmt::format("a child installed a filter and it was enforced{}{}",
                    kill_process_ok ? "" : " (SECCOMP_RET_KILL_PROCESS unavailable)", now);
    return probe;
  }
  if (!fork_error.empty()) {
    probe.failed_step = "fork";
    probe.detail = fork_error;
    return probe;
  }
  int step = std::clamp(failure.step, 0, static_cast<int>(kFilterNotEnforced));
  probe.failed_step = kSeccompStepNames[step];
  probe.sys_errno = failure.err;
  probe.detail = fmt::format("{} failed: {} ({}){}", probe.failed_step, ErrnoName(failure.err),
                             std::strerror(failure.err), now);
  return probe;
}

DockerProbe PingDockerSocket(const std::string& socket_path, int timeout_ms) {
  DockerProbe probe;
  probe.endpoint = socket_path;
  // The verdict is the backend's own connect (ping, /version, API negotiation, /info), so doctor
  // never approves a daemon the Docker backend would refuse.
  auto client = docker::EngineClient::Connect(socket_path);
  if (client) {
    const docker::DaemonInfo& info = (*client)->info();
    probe.reachable = probe.api_ok = true;
    probe.api_version = info.server_api_version.ToString();
    probe.detail = fmt::format("Engine API {} (spoken at {}) at {}", probe.api_version,
                               info.api_version.ToString(), socket_path);
    return probe;
  }
  probe.detail = client.error().message;
  // Refused: tell "nothing answers" from "answers, but not a daemon we can use" with one ping.
  docker::HttpRequest ping;
  ping.target = "/_ping";
  ping.timeout = std::chrono::milliseconds(timeout_ms);
  auto pong = docker::UnixSocketHttp(socket_path).Send(ping);
  if (pong && pong->status == 200) {
    probe.reachable = true;
    probe.api_version = pong->Header("API-Version");
  }
  return probe;
}

DockerProbe ProbeDocker() {
  auto socket_path = docker::DockerSocketPath(::getenv("DOCKER_HOST"));
  if (socket_path) return PingDockerSocket(*socket_path);
  DockerProbe probe;
  probe.endpoint = ::getenv("DOCKER_HOST");
  probe.detail = socket_path.error().message;
  return probe;
}

BackendChoice ChooseBackend(const UsernsProbe& userns, const SeccompProbe& seccomp,
                            const DockerProbe& docker, const std::string& requested,
                            const GvisorProbe& gvisor) {
  BackendChoice choice{"none", requested, ""};
  std::string namespace_why;
  if (!userns.ok) {
    namespace_why = "user namespaces unavailable: " + userns.detail;
  } else if (!seccomp.ok) {
    namespace_why = "seccomp unavailable: " + seccomp.detail;
  }
  bool docker_ok = docker.reachable && docker.api_ok;
  std::string docker_why = docker_ok ? docker.detail : "Docker unusable: " + docker.detail;

  if (requested == "namespace") {
    if (namespace_why.empty()) {
      choice.backend = "namespace";
      choice.reason = "SANDBOX_BACKEND=namespace; the user namespace and seccomp probes passed";
    } else {
      choice.reason = "SANDBOX_BACKEND=namespace, but " + namespace_why;
    }
  } else if (requested == "docker") {
    if (docker_ok) {
      choice.backend = "docker";
      choice.reason = "SANDBOX_BACKEND=docker; " + docker.detail;
    } else {
      choice.reason = "SANDBOX_BACKEND=docker, but " + docker_why;
    }
  } else if (requested == "gvisor") {
    choice.backend = gvisor.ok ? "gvisor" : "none";
    choice.reason =
        std::string("SANDBOX_BACKEND=gvisor") + (gvisor.ok ? "; " : ", but ") + gvisor.detail;
  } else if (requested == "auto") {
    if (namespace_why.empty()) {
      choice.backend = "namespace";
      choice.reason = "user namespaces and seccomp work (probed in a child)";
    } else if (docker_ok) {
      choice.backend = "docker";
      choice.reason = namespace_why + "; falling back to Docker: " + docker.detail;
    } else {
      choice.reason = namespace_why + "; " + docker_why;
    }
  } else {
    choice.reason =
        "SANDBOX_BACKEND='" + requested + "' is not one of auto, namespace, docker, gvisor";
  }
  return choice;
}

HostReport ProbeHost(const Limits& limits, const std::string& requested_backend,
                     const std::string& state_dir, const GvisorProbe& gvisor) {
  HostReport report;
  report.gvisor = gvisor;
  struct utsname uts {};
  if (::uname(&uts) == 0) report.kernel = uts.release;
  report.uid = ::geteuid();
  report.userns = ProbeUserNamespaces();
  report.seccomp = ProbeSeccomp();
  report.docker = ProbeDocker();
  const std::string owner = CgroupOwnerFor(state_dir);
  auto cgroups = CgroupManager::Detect(owner);
  report.cgroup_mode = cgroups->mode();
  report.cgroup_reason = cgroups->reason();
  report.cgroup_parents = cgroups->parent_dirs();
  if (owner != kDefaultCgroupOwner) {
    for (const std::string& dir : report.cgroup_parents) ::rmdir(dir.c_str());  // if empty
  }
  report.backend =
      ChooseBackend(report.userns, report.seccomp, report.docker, requested_backend, gvisor);
  if (report.backend.backend == "docker") {
    // The daemon enforces these through the container's HostConfig.
    report.limits.cgroup_mode = "docker";
    report.limits.reason = "the Docker daemon enforces these through the container's HostConfig";
    auto add = [&](const char* name, std::string value) {
      report.limits.limits.push_back(
          {name, LimitMechanism::kDocker, std::move(value), "enforced by the Docker daemon"});
    };
    add("memory", FormatBytes(limits.memory_bytes));
    add("swap", "0");
    add("cpu", fmt::format("{:.2g} cpu", limits.cpus));
    add("pids", std::to_string(limits.pids));
    add("disk", FormatBytes(limits.disk_bytes));
    add("tmp", FormatBytes(limits.tmp_bytes));
    add("open_files", std::to_string(limits.open_files));
    add("file_size", FormatBytes(limits.file_size_bytes));
  } else {
    report.limits = cgroups->Plan(limits);
  }
  return report;
}

}  // namespace sandbox::probe
