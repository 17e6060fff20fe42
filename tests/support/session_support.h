// What the session manager's tests over HostBackend share: a clock the test moves by hand (to
// expire or hibernate sessions without sleeping) and an image resolver for HostBackend, which
// has no images.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "runtime/session/session_manager.h"

namespace sandbox::testing {

class ManualClock {
 public:
  std::chrono::system_clock::time_point Now() {
    std::lock_guard<std::mutex> lock(mutex_);
    return now_;
  }
  void Advance(std::chrono::system_clock::duration by) {
    std::lock_guard<std::mutex> lock(mutex_);
    now_ += by;
  }

 private:
  std::mutex mutex_;
  std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
};

// Resolves any name to an image of that name and nothing else: HostBackend needs no rootfs.
inline ImageResolver HostImageResolver() {
  return [](const std::string& name) {
    ResolvedImage image;
    image.name = name;
    return Result<ResolvedImage>(image);
  };
}

}  // namespace sandbox::testing
