// Captures what the server logs through spdlog's default logger while it lives, so a test can
// say how much a call wrote and what; the previous default logger comes back on destruction.
#pragma once

#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace sandbox::testing {

class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::debug)
      : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(level);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() {
    spdlog::default_logger()->flush();
    spdlog::set_default_logger(previous_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Everything written so far.
  std::string Text() {
    spdlog::default_logger()->flush();
    std::lock_guard<std::mutex> lock(mutex_);
    return stream_.str();
  }
  size_t Size() { return Text().size(); }

 private:
  std::mutex mutex_;
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace sandbox::testing
