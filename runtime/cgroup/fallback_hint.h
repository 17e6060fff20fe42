// The one command that would give an unprivileged server real cgroup limits, named in the
// "rlimits only" reason that doctor, sandbox_session_status and run --json show.
#pragma once

#include <string>

namespace sandbox::cgroup {

struct FallbackHost {
  bool root = false;          // euid 0: delegation is not the missing piece
  bool cgroup2 = false;       // /sys/fs/cgroup is the unified hierarchy
  bool user_manager = false;  // a systemd user manager's bus is reachable (XDG_RUNTIME_DIR/bus)
};

// Empty when no single command would help (root, or cgroup v1 where systemd delegates nothing to
// users). Over SSH without linger there is no user manager to ask: enable-linger starts one.
std::string FallbackHint(const FallbackHost& host);

// This process's answers to FallbackHost's questions.
FallbackHost ProbeFallbackHost();

}  // namespace sandbox::cgroup
