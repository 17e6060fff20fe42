// What a SessionManager is configured with (the SANDBOX_* settings it reads, tools/cli/config.cc)
// and what a caller may ask of one session; shared by the manager's parts (sandbox_starter.h,
// session_limits.h, session_registry.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/session_egress.h"
#include "runtime/session/session_owner.h"

namespace sandbox {

struct ResolvedImage;

struct SessionConfig {
  std::string state_dir;                    // SANDBOX_STATE_DIR
  std::string default_image;                // SANDBOX_IMAGE (a store name or digest)
  std::string agent_dir;                    // host dir with sandbox-init and worker.py
  std::string wheelhouse;                   // SANDBOX_WHEELHOUSE ("" = none)
  Limits limits;                            // defaults, and the maxima for per-session overrides
  double exec_timeout_s = 60;               // SANDBOX_EXEC_TIMEOUT_S: default and maximum per call
  std::chrono::minutes ttl{30};             // SANDBOX_SESSION_TTL_M
  int max_sessions = 10;                    // SANDBOX_MAX_SESSIONS
  bool measure_calls = true;                // SANDBOX_USAGE: CallUsage around every run
  uint64_t max_output_bytes = 100 << 10;    // SANDBOX_MAX_OUTPUT_BYTES
  uint64_t max_code_bytes = 100 << 10;      // SANDBOX_MAX_CODE_BYTES
  uint64_t max_upload_bytes = 50ull << 20;  // SANDBOX_MAX_UPLOAD_BYTES
  // SANDBOX_POOL_SIZE: sandboxes of the default image and limits kept started for new sessions
  // (0 = no pool). SANDBOX_POOL_PRELOAD: the modules their worker has imported (comma-separated;
  // "" = none); sessions of that kind started cold get the same, ready a moment later.
  int pool_size = 0;
  std::string preload;
  egress::EgressConfig egress;  // SANDBOX_EGRESS_*, SANDBOX_INDEX_URL (off: no network)
  // SANDBOX_REPLICA_ID: named in the ids this server makes ("" = a single host); a handle
  // naming another replica is answered as such (runtime/session/session_id.h).
  std::string replica_id;
  // Sessions belong to the subject that created them (runtime/session/session_owner.h); what
  // one named subject may hold.
  SubjectQuota subject_quota;
  // Hibernation (docs/sessions.md "Hibernate, resume, fork"): a session idle this long is saved
  // under state_dir/hibernated and its sandbox stopped, and so is every live session at an orderly
  // stop (CloseAll); the next call naming it resumes it. 0: off, idle sessions are closed after
  // `ttl`. SANDBOX_HIBERNATE_AFTER_S (the server's default: the idle time-out).
  std::chrono::milliseconds hibernate_after{0};
  uint64_t saved_max_bytes = 10ull << 30;                      // SANDBOX_SAVED_MAX_BYTES
  std::chrono::seconds saved_ttl{std::chrono::hours(24 * 7)};  // SANDBOX_SAVED_TTL
  // What idleness is measured with; tests inject a clock to expire sessions without sleeping.
  // Empty: the system clock.
  std::function<std::chrono::system_clock::time_point()> clock;
  // The agent dir for sandboxes of an image when not agent_dir ("" or unset: agent_dir), and
  // what to do when a sandbox did not start on a dir it gave: `serve`'s kept copies with the
  // worker's byte code (tools/cli/run_agent_cache.h).
  std::function<std::string(const ResolvedImage&)> agent_dir_for;
  std::function<void(const std::string& dir)> agent_dir_failed;
};

// Per-session overrides; each must be <= the configured value (else invalid_argument).
struct SessionOptions {
  std::string name;
  std::string image;  // "" = default image
  std::optional<uint64_t> memory_bytes;
  std::optional<double> cpus;
  std::optional<uint32_t> pids;
  std::optional<uint64_t> disk_bytes;
  std::optional<bool> egress;  // false seals the session; true needs the server's allowlist
};

// Resolves an image name to what a backend needs (rootfs path, env). Provided by the caller so
// runtime/ does not depend on rootfs/ (the CLI wires ImageStore in).
struct ResolvedImage {
  std::string name;
  std::string rootfs;
  std::vector<std::string> env;
  std::string workdir;
  DockerImage docker;  // Docker backend only
};
using ImageResolver = std::function<Result<ResolvedImage>(const std::string& name)>;

}  // namespace sandbox
