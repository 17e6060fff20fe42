#include "mcp/progress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "mcp/jsonrpc.h"

namespace sandbox::mcp {

namespace {
constexpr size_t kTailBytes = 4096;
constexpr auto kMinInterval = std::chrono::milliseconds(200);
}  // namespace

std::string ProgressMessage(std::string_view tail, size_t max_bytes) {
  // Drop trailing blank lines, then take what follows the last newline.
  size_t end = tail.find_last_not_of(" \t\r\n");
  if (end == std::string_view::npos) return "";
  std::string_view text = tail.substr(0, end + 1);
  size_t newline = text.find_last_of('\n');
  std::string_view line = newline == std::string_view::npos ? text : text.substr(newline + 1);
  return ValidUtf8(Utf8Suffix(line, max_bytes));
}

RunProgress::RunProgress(nlohmann::json token, Send send, double total_seconds,
                         std::chrono::milliseconds heartbeat)
    : token_(std::move(token)),
      send_(std::move(send)),
      total_seconds_(total_seconds),
      heartbeat_(heartbeat),
      start_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { Loop(); });
}

RunProgress::~RunProgress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RunProgress::OnOutput(int /*stream*/, std::string_view chunk) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tail_.append(chunk);
    if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
    fresh_output_ = true;
  }
  wake_.notify_all();
}

void RunProgress::Loop() {
  double last_progress = -1;
  auto last_sent = std::chrono::steady_clock::time_point::min();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    bool due = last_sent == std::chrono::steady_clock::time_point::min() ||
               now - last_sent >= heartbeat_ || (fresh_output_ && now - last_sent >= kMinInterval);
    if (!due) {
      // Waiting out the minimum interval for output already seen, or for the heartbeat (which
      // fresh output cuts short).
      bool had_output = fresh_output_;
      auto next = had_output ? last_sent + kMinInterval : last_sent + heartbeat_;
      wake_.wait_until(lock, next, [&] { return stopping_ || fresh_output_ != had_output; });
      if (stopping_) return;
      continue;
    }
    fresh_output_ = false;
    std::string message = ProgressMessage(tail_);
    lock.unlock();

    double elapsed = std::chrono::duration<double>(now - start_).count();
    double progress = std::round(elapsed * 10) / 10;
    if (progress <= last_progress) progress = last_progress + 0.001;  // MUST increase
    last_progress = progress;
    nlohmann::json params = {{"progressToken", token_}, {"progress", progress}};
    if (total_seconds_ > 0 && progress <= total_seconds_) params["total"] = total_seconds_;
    params["message"] = message.empty() ? "running" : message;
    send_(MakeNotification("notifications/progress", std::move(params)));
    last_sent = now;

    lock.lock();
    if (stopping_) return;
  }
}

}  // namespace sandbox::mcp
