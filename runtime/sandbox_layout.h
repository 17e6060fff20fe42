// What every sandbox looks like from inside, on both backends, and how its session is named:
// the one place these facts live, so the namespace mounts, the Docker container spec, the agent,
// the MCP layer's download links and the cgroup sweep cannot drift apart.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace sandbox::layout {

// The session's files: a size-limited tmpfs, the working directory, what tools' paths are
// relative to and what download links serve.
inline constexpr char kDataDir[] = "/mnt/data";
// Scratch: a smaller tmpfs.
inline constexpr char kTmpDir[] = "/tmp";
// The agent (sandbox-init, worker.py), read-only.
inline constexpr char kAgentDir[] = "/.sandbox";
inline constexpr char kAgentInit[] = "/.sandbox/sandbox-init";
// The operator's offline wheels (SANDBOX_WHEELHOUSE), read-only, when configured.
inline constexpr char kWheelhouseDir[] = "/mnt/wheelhouse";
// The gVisor backend's egress socket directory (runtime/gvisor/egress_bridge.h), bound here
// when egress is on. Under /dev, which every backend covers with a tmpfs of its own, so the
// empty mount point the image store makes in each rootfs is seen on no other backend.
inline constexpr char kGvisorEgressDir[] = "/dev/.sandbox-egress";

// The unprivileged user code runs as, inside every sandbox.
inline constexpr uid_t kSandboxUid = 1000;
inline constexpr gid_t kSandboxGid = 1000;
inline constexpr char kSandboxUser[] = "1000:1000";  // as Docker's User field spells it

// Session ids: kSessionIdPrefix, a replica id and '_' when the server has one, then
// kSessionIdHexDigits lowercase hex digits (128 bits; runtime/session/session_id.h makes and
// checks them). The prefix also marks the cgroups and containers that belong to sessions, for
// the sweeps.
inline constexpr char kSessionIdPrefix[] = "sess_";
inline constexpr size_t kSessionIdHexDigits = 32;
// Ids minted before 128-bit ids had 12 (48 bits): still recognized, never made.
inline constexpr size_t kEarlierSessionIdHexDigits = 12;
// A replica id is a DNS label (at most 63 characters), so a StatefulSet pod's name can be one.
inline constexpr size_t kMaxReplicaIdLength = 63;
// The longest id, sess_<63-character replica>_<32 hex>: 101 characters. What names a cgroup, a
// record or a socket after a session must take this many.
inline constexpr size_t kMaxSessionIdLength =
    sizeof kSessionIdPrefix - 1 + kMaxReplicaIdLength + 1 + kSessionIdHexDigits;

}  // namespace sandbox::layout
