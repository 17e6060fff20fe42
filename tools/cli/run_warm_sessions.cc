#include "tools/cli/run_warm_sessions.h"

#include <algorithm>

namespace sandbox::cli {

WarmSessions::WarmSessions(SessionManager& manager, int size)
    : manager_(manager), size_(static_cast<size_t>(std::max(0, size))) {
  for (size_t i = 0; i < size_; ++i) starters_.emplace_back([this] { StarterLoop(); });
}

WarmSessions::~WarmSessions() {
  Stop();
  for (auto& starter : starters_) starter.join();
  for (const std::string& id : ready_) {
    (void)manager_.Close(id, /*force=*/true, SessionManager::Teardown::kBackground);
  }
}

void WarmSessions::StarterLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || ready_.size() + starting_ < size_; });
    if (stopping_) return;
    ++starting_;
    lock.unlock();
    auto session = manager_.Create({});
    lock.lock();
    --starting_;
    failing_ = !session;
    if (session) ready_.push_back(session->id);
    changed_.notify_all();
    if (failing_) return;  // a start that fails (the image, the host) would fail again
  }
}

std::optional<std::string> WarmSessions::Take() {
  std::unique_lock<std::mutex> lock(mutex_);
  // While starters work, one is on its way; once they stop (the input is over) or fail,
  // waiting would be for nothing.
  changed_.wait(lock, [&] { return !ready_.empty() || stopping_ || failing_ || size_ == 0; });
  if (ready_.empty()) return std::nullopt;
  std::string id = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  return id;
}

void WarmSessions::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  changed_.notify_all();
}

}  // namespace sandbox::cli
