// Host probes: what this machine supports, found by trying it in forked children (user
// namespaces, seccomp) or by asking (the Docker socket), and which backend `serve` would use.
// Behind `mcp-sandbox doctor`, and the backend choice of `serve` (SANDBOX_BACKEND).
// Built into sandbox_cgroup.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/limits.h"

namespace sandbox::probe {

// A forked child does what the namespace backend's setup needs: unshare(CLONE_NEWUSER), write
// uid_map, setgroups "deny", gid_map, unshare(CLONE_NEWNS), make "/" private, mount a tmpfs.
// It must be a child: unshare(CLONE_NEWUSER) fails with EINVAL in a multithreaded process.
struct UsernsProbe {
  bool ok = false;
  std::string failed_step;  // e.g. "write /proc/self/uid_map"; empty when ok
  int sys_errno = 0;        // errno of the failed step
  std::string detail;       // one line: what worked, or the step and errno
  std::string explanation;  // the likely cause, from the sysctls and errno (may be empty)
  std::vector<std::pair<std::string, std::string>> sysctls;  // those present on this kernel
};
UsernsProbe ProbeUserNamespaces();

// seccomp: the mode we run under now (/proc/self/status) and a child that sets no_new_privs
// and installs a filter making getppid() fail with a chosen errno, then checks it does.
struct SeccompProbe {
  bool ok = false;
  int mode_now = 0;     // 0 none, 1 strict, 2 filter (e.g. inside a container)
  int filters_now = 0;  // Seccomp_filters, when the kernel reports it
  std::string failed_step;
  int sys_errno = 0;
  std::string detail;
};
SeccompProbe ProbeSeccomp();

// The Docker Engine: DOCKER_HOST=unix://PATH or /var/run/docker.sock, `GET /_ping` over the
// socket (a raw HTTP/1.0 exchange), the Api-Version header it answers with.
struct DockerProbe {
  bool reachable = false;   // the daemon answered 200 to /_ping
  bool api_ok = false;      // the Docker backend would connect to it (API version negotiated)
  std::string endpoint;     // the socket path (or the unsupported DOCKER_HOST value)
  std::string api_version;  // "1.41"; empty when unknown
  std::string detail;
};
DockerProbe ProbeDocker();  // from the environment
DockerProbe PingDockerSocket(const std::string& socket_path, int timeout_ms = 2000);

// gVisor: runsc found and usable with the configured platform (runtime/gvisor CheckRunsc fills
// it in; this room does not link the backend).
struct GvisorProbe {
  bool ok = false;
  std::string detail = "not probed";
};

// SANDBOX_BACKEND=auto|namespace|docker|gvisor: auto picks namespace when the user namespace and
// seccomp probes pass, else docker when the daemon is reachable with a recent enough API, else
// none (never gvisor). A forced choice that cannot work gives none, with the reason.
struct BackendChoice {
  std::string backend;    // "namespace" | "docker" | "none"
  std::string requested;  // the SANDBOX_BACKEND value ("auto" when unset)
  std::string reason;
};
BackendChoice ChooseBackend(const UsernsProbe& userns, const SeccompProbe& seccomp,
                            const DockerProbe& docker, const std::string& requested,
                            const GvisorProbe& gvisor = {});

// Everything doctor reports.
struct HostReport {
  std::string kernel;  // uname -r
  unsigned uid = 0;
  UsernsProbe userns;
  SeccompProbe seccomp;
  DockerProbe docker;
  GvisorProbe gvisor;
  std::string cgroup_mode;
  std::string cgroup_reason;
  std::vector<std::string> cgroup_parents;
  EnforcedLimits limits;  // for `limits` under the chosen backend (and the cgroup mode found)
  BackendChoice backend;
};
// Runs every probe, and chooses a backend as ChooseBackend does for `requested_backend` (the
// configured SANDBOX_BACKEND). As root (or with a delegated cgroup) the cgroup detection creates
// the parent group of `state_dir`'s servers (CgroupOwnerFor), as `serve` would; one of a state
// dir other than the system's is removed again when empty.
HostReport ProbeHost(const Limits& limits, const std::string& requested_backend,
                     const std::string& state_dir, const GvisorProbe& gvisor = {});

}  // namespace sandbox::probe
