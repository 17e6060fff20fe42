#include "runtime/session/cold_preload_priority.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace sandbox {

ColdPreloadPriority::ColdPreloadPriority(std::string session_id, Setter set)
    : session_id_(std::move(session_id)), set_(std::move(set)) {}

bool ColdPreloadPriority::Set(CpuPriority priority) {
  if (auto set = set_(priority); !set) {
    // Not fatal either way: a session left at normal priority imports faster and competes
    // more; one left at background runs its call slower under contention. A failed lower is
    // tried again after each call, so it is logged at debug only.
    spdlog::log(priority == CpuPriority::kBackground ? spdlog::level::debug : spdlog::level::warn,
                "session {}: could not set its CPU priority to {}: {}", session_id_,
                priority == CpuPriority::kBackground ? "background" : "normal",
                set.error().message);
    return false;
  }
  return true;
}

void ColdPreloadPriority::ZygoteDue() {
  std::lock_guard<std::mutex> lock(mutex_);
  due_ = true;
  if (!done_ && !in_call_ && !lowered_) lowered_ = Set(CpuPriority::kBackground);
}

void ColdPreloadPriority::CallBegins() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_call_ = true;
  if (lowered_) {
    Set(CpuPriority::kNormal);
    lowered_ = false;
  }
}

void ColdPreloadPriority::CallEnds(bool preload_pending) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_call_ = false;
  if (done_) return;
  if (!preload_pending) {
    done_ = true;  // it stays at normal priority from now on
    return;
  }
  if (due_ && !lowered_) lowered_ = Set(CpuPriority::kBackground);
}

bool ColdPreloadPriority::lowered() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lowered_;
}

bool ColdPreloadPriority::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

}  // namespace sandbox
