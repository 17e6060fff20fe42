// The namespace probes' verdict (ProbeUserNamespaces and ProbeSeccomp both passed), kept in a
// file so a one-shot `mcp-sandbox run` forks no probe children on every call: a server probes
// once per start, a one-shot run once per change of the host.
//
// The verdict is tied to what it depends on (HostProbeKey): the kernel (release, version, boot
// id), the euid and egid, the user namespace we run in and our own seccomp mode, the sysctls
// that gate user namespaces, the cgroup mount layout, and this binary (device, inode, size,
// mtime). Anything else changes nothing the probes try. Only a pass is kept: a failure is
// probed again each time, so a host fixed since is noticed at once. A kept pass that went
// wrong costs no safety, because the namespace backend performs every step of the setup for
// real and fails closed; the caller forgets the verdict then (ForgetNamespaceVerdict) and
// probes again.
//
// The file is the euid's own (mode 0600, owner checked on reading, replaced atomically), so
// another user can neither plant nor read a verdict.
#pragma once

#include <string>

namespace sandbox::probe {

// The facts the verdict depends on, one "name=value" a line.
std::string HostProbeKey();

// Where `state_dir` keeps the verdict of this euid.
std::string ProbeCachePath(const std::string& state_dir);

// True when `path` holds a pass for `key`. Any doubt (no file, another key, another owner, a
// file others may write) answers false.
bool CachedNamespacesOk(const std::string& path, const std::string& key);

// Keeps a pass for `key` (best effort: a cache that cannot be written only costs the probes).
void RememberNamespacesOk(const std::string& path, const std::string& key);

// Removes the verdict (a start failed after it was used).
void ForgetNamespaceVerdict(const std::string& path);

}  // namespace sandbox::probe
