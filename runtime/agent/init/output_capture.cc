#include "runtime/agent/init/output_capture.h"

namespace sandbox::agent {

OutputCapture::OutputCapture(uint64_t max_bytes_per_stream, Clock::time_point started)
    : max_bytes_(max_bytes_per_stream), last_flush_(started) {}

void OutputCapture::Add(int stream, std::string_view data) {
  Stream& s = streams_[stream - 1];
  size_t room = max_bytes_ > s.kept.size() ? static_cast<size_t>(max_bytes_ - s.kept.size()) : 0;
  if (data.size() > room) {
    s.truncated = true;
    data = data.substr(0, room);  // the pipe is still read; nothing more is kept
  }
  s.kept.append(data);
}

size_t OutputCapture::Pending() const {
  size_t pending = 0;
  for (const auto& s : streams_) pending += s.kept.size() - s.sent;
  return pending;
}

void OutputCapture::Flush(Clock::time_point now, bool force,
                          const std::function<void(int stream, std::string_view chunk)>& send) {
  size_t pending = Pending();
  if (pending == 0) return;
  if (!force && pending < kEventBytes && now - last_flush_ < kEventInterval) return;
  for (int stream = 1; stream <= 2; ++stream) {
    Stream& s = streams_[stream - 1];
    if (s.kept.size() == s.sent) continue;
    send(stream, std::string_view(s.kept).substr(s.sent));
    s.sent = s.kept.size();
  }
  last_flush_ = now;
}

std::optional<OutputCapture::Clock::time_point> OutputCapture::NextFlush() const {
  if (Pending() == 0) return std::nullopt;
  return last_flush_ + kEventInterval;
}

void AppendTail(std::string& tail, std::string_view data, size_t max_bytes) {
  tail.append(data);
  if (tail.size() > max_bytes) tail.erase(0, tail.size() - max_bytes);
}

}  // namespace sandbox::agent
