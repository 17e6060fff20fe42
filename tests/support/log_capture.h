// Captures what the server logs through spdlog's default logger while it lives, so a test can
// say how much a call wrote and what; the previous default logger comes back on destruction.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace sandbox::testing {

class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::debug)
      : sink_(std::make_shared<TextSink>()), previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(level);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Everything written so far.
  std::string Text() { return sink_->Text(); }
  size_t Size() { return Text().size(); }
  // How many times `needle` occurs in what was written.
  size_t Count(const std::string& needle) {
    std::string text = Text();
    size_t count = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++count;
    }
    return count;
  }
  // Waits up to `limit` for `needle` to occur more than `seen` times (a line the server writes
  // after the reply it sent, like tool_call); whether it did.
  bool WaitForMore(const std::string& needle, size_t seen,
                   std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (Count(needle) <= seen) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  // Appends each formatted line under the sink's own lock, which Text() takes too: the server
  // logs from its worker threads while the test reads (an ostream sink read from outside its
  // lock is a data race).
  class TextSink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string Text() {
      std::lock_guard<std::mutex> lock(mutex_);
      return text_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
      spdlog::memory_buf_t formatted;
      formatter_->format(message, formatted);
      text_.append(formatted.data(), formatted.size());
    }
    void flush_() override {}

   private:
    std::string text_;
  };

  std::shared_ptr<TextSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace sandbox::testing
