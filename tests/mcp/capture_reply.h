// An in-memory Reply for dispatcher tests: records what the server sends for one message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "mcp/server.h"

namespace sandbox::mcp::testing {

class CaptureReply : public Reply {
 public:
  void Send(const Json& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_ > 0) ++sent_after_close_;
    messages_.push_back(message);
    changed_.notify_all();
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++closed_;
    changed_.notify_all();
  }
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [this] { return closed_ > 0; });
  }
  // Waits until a message satisfying `pred` has been sent.
  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      for (const auto& m : messages_) {
        if (pred(m)) return true;
      }
      return false;
    });
  }
  std::vector<Json> messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }
  int closed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }
  // Messages sent after Close(): a transport would have dropped or misrouted them.
  int sent_after_close() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_after_close_;
  }
  // The one response (a message without "method"); null when there is none.
  Json response() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& m : messages_) {
      if (!m.is_object() || !m.contains("method")) return m;
    }
    return nullptr;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Json> messages_;
  int sent_after_close_ = 0;
  int closed_ = 0;
};

}  // namespace sandbox::mcp::testing
