#include "runtime/docker/cpu_priority_updater.h"

#include <spdlog/spdlog.h>

#include "runtime/docker/container_spec.h"

namespace sandbox::docker {

CpuPriorityUpdater::CpuPriorityUpdater(std::shared_ptr<EngineClient> engine,
                                       std::string container_id, std::string session_id)
    : engine_(std::move(engine)),
      container_id_(std::move(container_id)),
      session_id_(std::move(session_id)) {}

CpuPriorityUpdater::~CpuPriorityUpdater() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wanted_.reset();
  }
  if (thread_.joinable()) thread_.join();
}

void CpuPriorityUpdater::Request(CpuPriority priority) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  wanted_ = priority;
  if (running_) return;  // the running thread takes it after the update under way
  // A thread that found nothing left has ended (or is about to): reap it, start a new one.
  if (thread_.joinable()) thread_.join();
  running_ = true;
  thread_ = std::thread([this] { Run(); });
}

void CpuPriorityUpdater::Run() {
  for (;;) {
    CpuPriority priority;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!wanted_ || stopping_) {
        running_ = false;
        return;
      }
      priority = *wanted_;
      wanted_.reset();
    }
    auto updated = engine_->UpdateContainer(container_id_, {{"CpuShares", CpuSharesFor(priority)}});
    if (!updated) {
      spdlog::warn("session {}: set CPU priority: {}", session_id_, updated.error().message);
      continue;
    }
    for (const std::string& warning : *updated) {
      spdlog::warn("session {}: Docker: {}", session_id_, warning);
    }
  }
}

}  // namespace sandbox::docker
