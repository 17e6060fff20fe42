// Backend: the small interface every sandbox technology implements (namespaces, Docker).
// A backend starts a sandbox whose agent is connected to one ByteStream, and kills it.
// Everything else (running code, files, artifacts) goes through the agent protocol.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/byte_stream.h"
#include "runtime/limits.h"
#include "runtime/sandbox_layout.h"

namespace sandbox {

// Docker backend: an image archive to load and the id the daemon gives the image it holds.
struct DockerImageSource {
  std::string archive;   // docker-save / OCI tar for POST /images/load
  std::string image_id;  // "sha256:<hex>": the image the container is then created from
};
// Makes a DockerImageSource on demand (e.g. exports a stored image). Called by the Docker
// backend only when the daemon lacks the image, so other backends never pay for it.
using DockerImageProvider = std::function<Result<DockerImageSource>()>;

// What the Docker backend needs to have an image in its daemon; other backends ignore it. One
// struct, carried whole from the image resolver through the session manager to the backend.
struct DockerImage {
  // The image reference in the daemon ("" = SandboxSpec::image_name); the store uses the config
  // digest, which Docker uses as the image id.
  std::string reference;
  // The docker-save / OCI archive (`image build` output) to POST /images/load when the daemon
  // lacks the image ("" = none).
  std::string archive;
  // When archive is "": asked for one when the daemon lacks the image; the container then runs
  // the image id it returns (empty = none: a missing image is an error).
  DockerImageProvider source;
};

// How a backend carries a sandbox's egress channel (runtime/egress/) to sandbox-init.
enum class EgressTransport {
  kNone,        // it cannot: the session manager drops the egress policy
  kChannelFd,   // Start passes SandboxSpec::egress_channel_fd down (inheritance: namespaces)
  kSocketPath,  // Start makes SandboxSpec::egress_socket_path reachable inside (a bind mount:
                // Docker); sandbox-init connects to it before its agent says hello
};

// A sandbox's share of contended CPU next to the others. Pooled sandboxes start and wait as
// kBackground, so a refill (importing pandas in a new sandbox) never slows a session's running
// call; a claim raises them to kNormal. It changes no limit: cpus stays the ceiling.
enum class CpuPriority { kNormal, kBackground };

// Everything a backend needs to start one sandbox. Plain data.
struct SandboxSpec {
  std::string session_id;        // runtime/session/session_id.h; names cgroups, containers, labels
  std::string image_name;        // the store name or digest it came from (labels, Docker image)
  std::string rootfs;            // host path of the unpacked image rootfs (namespace backend)
  std::vector<std::string> env;  // KEY=VALUE from the image config, plus ours
  std::string workdir = layout::kDataDir;
  Limits limits;
  std::string agent_dir;   // host dir holding sandbox-init and worker.py, seen at /.sandbox
  std::string wheelhouse;  // optional host dir, mounted read-only at /mnt/wheelhouse
  // Optional: the sandbox's end of its egress channel (runtime/egress/), borrowed; the backend
  // hands it to sandbox-init, which then relays the sandbox's proxy connections over it. -1:
  // no egress.
  int egress_channel_fd = -1;
  // Optional: the host path of a listening SOCK_SEQPACKET socket (runtime/session/
  // egress_socket.h) that sandbox-init connects to as its egress channel. "": no egress.
  std::string egress_socket_path;
  DockerImage docker;                               // Docker backend only
  CpuPriority cpu_priority = CpuPriority::kNormal;  // from the first process on
};

// What a sandbox has used so far, where the backend can tell.
struct SandboxUsage {
  uint64_t memory_bytes = 0;
  uint64_t memory_peak_bytes = 0;
  uint32_t pids = 0;
  uint64_t oom_kills = 0;  // processes killed for hitting the memory limit, since start
  double cpu_seconds = 0;
};

class Sandbox {
 public:
  // Destruction kills every process of the sandbox and removes what it made (cgroups,
  // mounts, state records, containers). It never throws and never leaves anything behind.
  virtual ~Sandbox() = default;
  virtual ByteStream& stream() = 0;
  // Kills every process in the sandbox now. Idempotent.
  virtual Status Kill() = 0;
  virtual SandboxUsage Usage() = 0;
  // Starts measuring one call's memory peak: resets the high-water mark where the kernel allows
  // it and returns what reads the peak since; empty where it cannot (runtime/cgroup/memory_peak.h
  // says where), and the session's peak is all there is.
  virtual std::function<std::optional<uint64_t>()> StartMemoryPeakWindow() { return {}; }
  // Usage().oom_kills alone; read around every run, so backends make it cheaper than Usage().
  virtual uint64_t OomKills() { return Usage().oom_kills; }
  // Usage().cpu_seconds alone; read around every run (call_usage.h), so backends make it one
  // file where they can.
  virtual double CpuSeconds() { return Usage().cpu_seconds; }
  // Changes the sandbox's CPU priority (cgroup cpu.weight / cpu.shares, the container's CPU
  // shares). Where the backend has no means to, a no-op that succeeds: priority is a hint.
  virtual Status SetCpuPriority(CpuPriority /*priority*/) { return {}; }
  virtual const EnforcedLimits& enforced_limits() const = 0;
  virtual std::string backend_name() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "namespace" or "docker"
  // Which SandboxSpec field Start honours for network egress (runtime/egress/), if any.
  virtual EgressTransport egress_transport() const { return EgressTransport::kNone; }
  bool SupportsEgress() const { return egress_transport() != EgressTransport::kNone; }
  // Starts a sandbox with its agent running and connected. A failure names the step and errno;
  // nothing of a half-made sandbox is left behind.
  virtual Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec& spec) = 0;
  // The limits Start would enforce for `limits` on this host, without starting anything.
  virtual EnforcedLimits PlanLimits(const Limits& limits) const = 0;
  // Removes every process, cgroup, mount, container and record a crashed server left behind.
  // Returns how many sandboxes were swept.
  virtual Result<int> SweepOrphans() = 0;
};

}  // namespace sandbox
