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
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CpuPriorityUpdater::Request(CpuPriority priority, std::chrono::milliseconds settle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  wanted_ = priority;
  due_ = std::chrono::steady_clock::now() + settle;
  if (running_) {
    wake_.notify_all();  // the running thread takes it after the update under way
    return;
  }
  // A thread that found nothing left has ended (or is about to): reap it, start a new one.
  if (thread_.joinable()) thread_.join();
  running_ = true;
  thread_ = std::thread([this] { Run(); });
}

void CpuPriorityUpdater::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!wanted_ || stopping_) {
      running_ = false;
      return;
    }
    if (std::chrono::steady_clock::now() < due_) {
      wake_.wait_until(lock, due_);
      continue;
    }
    CpuPriority priority = *wanted_;
    wanted_.reset();
    if (applied_ == priority) continue;
    applied_ = priority;
    lock.unlock();
    auto updated = engine_->UpdateContainer(container_id_, {{"CpuShares", CpuSharesFor(priority)}});
    if (!updated)
      spdlog::warn("session {}: set CPU priority: {}", session_id_, updated.error().message);
    for (const std::string& warning : updated ? *updated : std::vector<std::string>{}) {
      spdlog::warn("session {}: Docker: {}", session_id_, warning);
    }
    lock.lock();
    if (!updated) applied_.reset();
  }
}

}  // namespace sandbox::docker
