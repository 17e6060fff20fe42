// Who owns a container, and whether the orphan sweep may judge it.
//
// Every container carries two labels:
//  - mcp-sandbox.host: the host the creating server runs on, "<machine-id>/<hostname>". Both are
//    stable across reboots; a second host sharing the daemon (another VM on a remote socket,
//    another container on the host's socket) differs in at least one of them in any sane setup
//    (cloned VMs keep a machine-id only until systemd-firstboot; containers of one image share
//    a baked machine-id but get their own hostname).
//  - mcp-sandbox.owner: the server process, "<boot id>/<pid namespace inode>/<pid>/<start time>"
//    (start time in clock ticks since boot, proc(5) /proc/pid/stat field 22). pid and start
//    time only mean something inside that boot and that pid namespace.
//  - mcp-sandbox.replica: the creating server's SANDBOX_REPLICA_ID, when it has one.
// The sweep removes a container only when the owner is provably gone: our host, and either an
// earlier boot of it or our pid namespace with that process no longer running. Anything else
// (another host, another pid namespace of ours, a container from before these labels) is left
// alone: removing a live session of someone else is worse than leaving a stopped container.
// One exception: a server with a replica id takes containers of its own replica id that no
// live process of its pid namespace owns as an earlier run of itself (a swarm slot or a
// StatefulSet pod restarted in a new container, hence a new pid namespace): an orchestrator runs
// one process per replica id, so nobody else can hold them.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace sandbox::docker {

// What the sweep needs to know about the process it runs in.
struct LocalIdentity {
  std::string host;     // "<machine-id>/<hostname>"
  std::string boot_id;  // /proc/sys/kernel/random/boot_id
  std::string pid_ns;   // inode of /proc/self/ns/pid
  std::string replica;  // SANDBOX_REPLICA_ID ("" = none)
};

// The identity of this process (read from /etc/machine-id, uname, /proc).
LocalIdentity CurrentIdentity();

// The owner label value for this process.
std::string CurrentOwner();

enum class OwnerVerdict {
  kAlive,      // ours and still running: keep
  kGone,       // ours and provably gone: sweep
  kNotJudged,  // another host, another pid namespace, or no host label: keep
};

struct OwnerJudgement {
  OwnerVerdict verdict;
  std::string why;  // for the log
};

// Judges one container's labels (`host_label`/`owner_label`/`replica_label` empty when absent).
// `running(pid, start)` says whether pid runs with that start time here. Pure apart from
// `running`.
OwnerJudgement JudgeOwner(const LocalIdentity& local, std::string_view host_label,
                          std::string_view owner_label,
                          const std::function<bool(long pid, std::string_view start)>& running,
                          std::string_view replica_label = {});

// Whether pid runs here with start time `start` (read from /proc).
bool ProcessRuns(long pid, std::string_view start);

// The start time field of /proc/<pid>/stat text, or "" when malformed. Pure.
std::string StartTimeFromStat(std::string_view stat);

}  // namespace sandbox::docker
