// A container's CPU priority changed through the daemon (POST /containers/{id}/update with its
// CpuShares) off the caller's thread. The update takes 20-50 ms on a loaded host, and a claim
// from the warm pool raises a pooled sandbox's priority on the request path, where the
// namespace backend's cgroup write costs microseconds; priority is a hint (backend.h), so the
// claim does not wait for it. The latest priority asked for wins; a failure is logged. Where the
// kernel already holds the value (the backend wrote cgroup v1 cpu.shares itself), the daemon is
// told once the priority has settled: a session started cold changes it at every call while
// its preload imports, and an update per call (runc runs for each) would load the daemon.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/backend.h"
#include "runtime/docker/engine_client.h"

namespace sandbox::docker {

class CpuPriorityUpdater {
 public:
  CpuPriorityUpdater(std::shared_ptr<EngineClient> engine, std::string container_id,
                     std::string session_id);
  // Waits for an update under way and drops one not begun (the container is about to go).
  ~CpuPriorityUpdater();
  CpuPriorityUpdater(const CpuPriorityUpdater&) = delete;
  CpuPriorityUpdater& operator=(const CpuPriorityUpdater&) = delete;

  // Returns at once; the update runs on a thread of its own, started on demand and ended once
  // nothing is left to apply (most sandboxes never change priority and never have one).
  // `settle`: apply only once no other request came for that long.
  void Request(CpuPriority priority,
               std::chrono::milliseconds settle = std::chrono::milliseconds(0));

 private:
  void Run();

  std::shared_ptr<EngineClient> engine_;
  std::string container_id_;
  std::string session_id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<CpuPriority> wanted_;          // asked for and not yet applied
  std::chrono::steady_clock::time_point due_;  // when wanted_ is applied
  std::optional<CpuPriority> applied_;         // the last one the daemon took
  bool running_ = false;                       // the thread is applying or about to
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sandbox::docker
