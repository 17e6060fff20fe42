// A delegated cgroup for an unprivileged server, asked of the user's own systemd manager over
// D-Bus (sd-bus): a transient scope with Delegate=yes holding this process, as rootless podman
// and crun's systemd cgroup manager get theirs. The cgroup v2 code then uses the scope's cgroup
// as it uses any cgroup delegated to us (runtime/cgroup/cgroup2.h).
//
// One scope per server process, named "<owner>-<pid>.scope" after the cgroup owner (which names
// the state dir, CgroupOwnerFor) and the server's pid: two servers never share one, and a
// server's sweep finds the scopes of its own state dir only. The scope ends when its last process
// exits; a crashed server's scope, still holding sandboxes, is stopped by the next sweep.
#pragma once

#include <sys/types.h>

#include <string>

#include "runtime/base/result.h"

namespace sandbox::cgroup {

// "<owner>-<pid>.scope".
std::string ScopeNameFor(const std::string& owner, pid_t pid);

// True when `unit` is a scope of `owner`'s servers: exactly "<owner>-<digits>.scope".
bool IsScopeOf(const std::string& owner, const std::string& unit);

// Asks the user's systemd manager for a transient scope with Delegate=yes holding this process
// and waits until the process is in it. Returns the unit name. A leftover scope of the same name
// (a crashed server whose pid we now have) is stopped first. Fails with a reason a user can act
// on: no user bus, the manager refused, the job failed.
Result<std::string> MoveIntoDelegatedScope(const std::string& owner);

// Stops the scopes of `owner`'s servers whose server is gone (no process in the scope's own
// cgroup nor in its "server" leaf), killing the sandboxes they still hold. `mount` is the cgroup2
// mount the scopes' ControlGroup paths are under. Returns how many were stopped.
Result<int> SweepStaleScopes(const std::string& owner, const std::string& mount);

}  // namespace sandbox::cgroup
