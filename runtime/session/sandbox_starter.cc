#include "runtime/session/sandbox_starter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "runtime/agent/agent_env.h"
#include "runtime/cgroup/background_cpu.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/egress_bytes_file.h"
#include "runtime/session/egress_socket.h"
#include "runtime/session/session_id.h"

namespace sandbox {

namespace {

// How long a new sandbox may take to say hello (Python start-up on a loaded host included).
constexpr std::chrono::seconds kReadyTimeout{30};
// How long a pooled sandbox may take to import the preload (numpy, pandas, matplotlib: about a
// second; much more on a loaded host).
constexpr std::chrono::seconds kWarmTimeout{120};

}  // namespace

void AddDefaultEnv(std::vector<std::string>& env) {
  auto has = [&env](std::string_view key) {
    return std::any_of(env.begin(), env.end(), [key](const std::string& kv) {
      return kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=';
    });
  };
  if (!has("PATH"))
    env.emplace_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  if (!has("HOME")) env.emplace_back(std::string("HOME=") + layout::kTmpDir);
  if (!has("LANG")) env.emplace_back("LANG=C.UTF-8");
  if (!has("MPLBACKEND")) env.emplace_back("MPLBACKEND=Agg");
}

SandboxStarter::SandboxStarter(const SessionConfig& config, Backend& backend,
                               ImageResolver resolver)
    : config_(config), backend_(backend), resolver_(std::move(resolver)) {}

Result<ResolvedImage> SandboxStarter::Resolve(const std::string& name) const {
  return resolver_(name);
}

Result<WarmSandbox> SandboxStarter::Start(const std::string& session_id, const ResolvedImage& image,
                                          const Limits& limits, bool preload, bool egress,
                                          CpuPriority cpu_priority, StartCancel* cancel) const {
  // Refused before anything is started: a session runs in one sandbox at a time.
  SBX_ASSIGN_OR_RETURN(LiveSandboxIds::Claim claim, live_ids_.Take(session_id));
  SandboxSpec spec;
  spec.cpu_priority = cpu_priority;
  spec.session_id = session_id;
  spec.image_name = image.name;
  spec.rootfs = image.rootfs;
  spec.env = image.env;
  AddDefaultEnv(spec.env);
  // A session started cold (the pool was empty: a burst, most likely): its zygote waits for
  // the server's word (QueueColdPreload), so its imports never run beside the burst's calls.
  const bool preload_on_request =
      preload && !config_.preload.empty() && cpu_priority == CpuPriority::kNormal;
  if (preload && !config_.preload.empty()) {
    spec.env.push_back(std::string(agent_env::kPreload) + "=" + config_.preload);  // init strips it
    if (preload_on_request) spec.env.push_back(std::string(agent_env::kPreloadOnRequest) + "=1");
  }
  if (!image.workdir.empty()) spec.workdir = image.workdir;
  spec.limits = limits;
  spec.agent_dir = config_.agent_dir;
  if (config_.agent_dir_for) {
    if (std::string dir = config_.agent_dir_for(image); !dir.empty()) spec.agent_dir = dir;
  }
  spec.wheelhouse = config_.wheelhouse;
  spec.docker = image.docker;
  WarmSandbox started;
  started.preload_on_request = preload_on_request;
  started.session_id = session_id;
  started.image = image.name;
  if (egress) {
    auto proxy = SessionEgress::Start(config_.egress, session_id, backend_.egress_transport(),
                                      EgressSocketDir(config_.state_dir),
                                      EgressBytesDir(config_.state_dir), spec);
    if (!proxy) metrics::SandboxStartFailed(backend_.name(), "egress");
    SBX_ASSIGN_OR_RETURN(started.egress, std::move(proxy));
  }
  auto sandbox = backend_.Start(spec);
  if (!sandbox) {
    metrics::SandboxStartFailed(backend_.name(), "backend");
    Error error = std::move(sandbox.error()).Context("start sandbox");
    if (error.code == ErrorCode::kInternal || error.code == ErrorCode::kNotFound) {
      error.code = ErrorCode::kSandboxUnavailable;
    }
    return Fail(std::move(error));
  }
  started.sandbox = LiveSandboxIds::Hold(std::move(claim), std::move(*sandbox));
  // Ends before `started` (declared after it): a stop kills the sandbox, never a destroyed one.
  StartCancel::Shown shown = StartCancel::Show(cancel, *started.sandbox);
  started.agent = std::make_unique<AgentClient>(started.sandbox->stream());
  if (auto ready = started.agent->WaitReady(
          std::chrono::duration_cast<std::chrono::milliseconds>(kReadyTimeout));
      !ready) {
    metrics::SandboxStartFailed(backend_.name(), "agent");
    // Not when a stop killed it: a kept dir is forgotten only for a worker that did not start.
    if (spec.agent_dir != config_.agent_dir && config_.agent_dir_failed &&
        (cancel == nullptr || !cancel->Cancelled())) {
      config_.agent_dir_failed(spec.agent_dir);  // the next start takes the plain agent dir
    }
    Error error = std::move(ready.error()).Context("sandbox agent did not start");
    error.code = ErrorCode::kSandboxUnavailable;
    return Fail(std::move(error));  // ~Sandbox kills and cleans the sandbox
  }
  if (started.egress) {
    if (auto ready = started.egress->SandboxReady(); !ready) {
      metrics::SandboxStartFailed(backend_.name(), "egress");
      Error error = std::move(ready.error()).Context("egress channel");
      error.code = ErrorCode::kSandboxUnavailable;
      return Fail(std::move(error));
    }
  }
  return started;
}

Result<WarmSandbox> SandboxStarter::StartPooled(const PoolKey& key, StartCancel* cancel) const {
  SBX_ASSIGN_OR_RETURN(ResolvedImage image, resolver_(key.image));
  SBX_ASSIGN_OR_RETURN(WarmSandbox warm, Start(NewSessionId(config_.replica_id), image, key.limits,
                                               true, key.egress, CpuPriority::kBackground, cancel));
  // The preload's import is the long part of a pooled start: a stop cancels it too.
  StartCancel::Shown shown = StartCancel::Show(cancel, *warm.sandbox);
  // The limit counts the time the warm-up could run: the stretches the background cap held it
  // to its small part of a CPU (while calls ran) do not count, or a busy server would kill
  // every refill (at a tenth of a CPU one takes ten times as long).
  auto& cap = cgroup::BackgroundCpuCap::Instance();
  const auto capped_before = cap.CappedTime();
  auto capped_since = [&] { return cap.CappedTime() - capped_before; };
  if (auto warmed = warm.agent->WaitWarm(kWarmTimeout, capped_since); !warmed) {
    return Fail(std::move(warmed.error()).Context("preload"));
  }
  static std::atomic<bool> failures_logged{false};
  if (!warm.agent->preload().failed.empty() && !failures_logged.exchange(true)) {
    for (const auto& failure : warm.agent->preload().failed) {
      spdlog::warn("preload: {} (left out)", failure);
    }
  }
  return warm;
}

}  // namespace sandbox
