// notifications/progress for a running tool call: elapsed seconds as progress (strictly
// increasing), the time limit as total, the last line of output as message. Sent when output
// arrives (at most every 200 ms) and as a heartbeat every second, from its own thread, so a
// slow client never stalls the run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "mcp/tool.h"

namespace sandbox::mcp {

class RunProgress : public ProgressReporter {
 public:
  using Send = std::function<void(const nlohmann::json& notification)>;
  RunProgress(nlohmann::json token, Send send, double total_seconds,
              std::chrono::milliseconds heartbeat = std::chrono::seconds(1));
  // Nothing is sent once the destructor has returned.
  ~RunProgress() override;
  void OnOutput(int stream, std::string_view chunk) override;

 private:
  void Loop();

  nlohmann::json token_;
  Send send_;
  double total_seconds_;
  std::chrono::milliseconds heartbeat_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool fresh_output_ = false;
  std::string tail_;  // the last bytes of output
  std::thread thread_;
};

// The message of a progress notification for output ending in `tail`: its last non-empty
// line, at most `max_bytes`, valid UTF-8.
std::string ProgressMessage(std::string_view tail, size_t max_bytes = 200);

}  // namespace sandbox::mcp
