// SandboxStarter: the start of one sandbox for a session, from the session manager's settings:
// the image resolved, the default environment added, the preload asked for, an egress channel
// when the session has a network, then the backend's start and the agent's hello. It makes the
// sandboxes of new sessions (started cold), of the warm pool (StartPooled) and of resumed ones;
// which sandbox becomes which session is the manager's business, not this one's.
//
// It keeps the rule that a session has one live sandbox at a time (live_sandbox_ids.h), above
// every backend.
//
// Thread-safe: it reads settings fixed before it is made (the manager's SessionConfig, which
// outlives it), calls the backend, which is itself thread-safe, and its one lock is the live
// ids'.
#pragma once

#include <string>

#include "runtime/backend.h"
#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/live_sandbox_ids.h"
#include "runtime/session/sandbox_pool.h"
#include "runtime/session/session_config.h"
#include "runtime/session/start_cancel.h"

namespace sandbox {

class SandboxStarter {
 public:
  // `config` and `backend` must outlive the starter.
  SandboxStarter(const SessionConfig& config, Backend& backend, ImageResolver resolver);

  // What the backend needs to start `name` (a store name or digest); its errors as they are.
  Result<ResolvedImage> Resolve(const std::string& name) const;

  // Starts a sandbox and waits for its agent's hello; `preload` asks for the preload zygote
  // (waiting for the manager's word when cpu_priority is kNormal: a session started cold),
  // `egress` for a channel to a proxy of the server's egress policy. A start that fails is
  // kSandboxUnavailable, and leaves nothing behind; so is a start for a session whose sandbox
  // is live (not yet killed), and one that `cancel` (may be null) cancels while the sandbox
  // starts.
  Result<WarmSandbox> Start(const std::string& session_id, const ResolvedImage& image,
                            const Limits& limits, bool preload, bool egress,
                            CpuPriority cpu_priority = CpuPriority::kNormal,
                            StartCancel* cancel = nullptr) const;

  // A sandbox for the warm pool: `key`'s image and limits, at background priority, returned
  // once its worker has the preload imported; `cancel` (may be null) ends it sooner, with
  // nothing left behind.
  Result<WarmSandbox> StartPooled(const PoolKey& key, StartCancel* cancel = nullptr) const;

 private:
  const SessionConfig& config_;
  Backend& backend_;
  ImageResolver resolver_;
  LiveSandboxIds live_ids_;
};

// Environment every sandbox gets unless the image sets it: a PATH, a writable HOME (the rootfs is
// read-only; /tmp is a tmpfs), a UTF-8 locale and a headless matplotlib.
void AddDefaultEnv(std::vector<std::string>& env);

}  // namespace sandbox
