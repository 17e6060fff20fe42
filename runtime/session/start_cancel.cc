#include "runtime/session/start_cancel.h"

#include <spdlog/spdlog.h>

namespace sandbox {

StartCancel::Shown StartCancel::Show(StartCancel* cancel, Sandbox& sandbox) {
  if (cancel == nullptr) return Shown(nullptr);
  std::lock_guard<std::mutex> lock(cancel->mutex_);
  cancel->shown_ = &sandbox;
  if (cancel->cancelled_) (void)sandbox.Kill();
  return Shown(cancel);
}

StartCancel::Shown::~Shown() {
  if (cancel_ == nullptr) return;
  std::lock_guard<std::mutex> lock(cancel_->mutex_);
  cancel_->shown_ = nullptr;
}

bool StartCancel::Cancelled() {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_;
}

void StartCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancelled_) return;
  cancelled_ = true;
  if (shown_ == nullptr) return;
  if (auto killed = shown_->Kill(); !killed) {
    spdlog::warn("stopping a sandbox start: {}", killed.error().message);
  }
}

}  // namespace sandbox
