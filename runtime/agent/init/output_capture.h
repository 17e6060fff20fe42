// What a run printed, as init keeps and forwards it: each stream kept up to the run's byte
// budget (the rest is read and dropped, and the stream flagged truncated), and forwarded in
// output events batched by size and time, so a chatty cell does not become a frame per write and
// a quick cell needs no event at all. Pure bookkeeping over a clock the caller passes in:
// testable without processes or pipes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox::agent {

class OutputCapture {
 public:
  using Clock = std::chrono::steady_clock;
  // An event goes out when this much is pending, or this long after the previous one.
  static constexpr size_t kEventBytes = 4096;
  static constexpr auto kEventInterval = std::chrono::milliseconds(100);

  OutputCapture(uint64_t max_bytes_per_stream, Clock::time_point started);

  // Output of stream 1 (stdout) or 2 (stderr). Beyond the budget nothing more is kept.
  void Add(int stream, std::string_view data);

  // Calls `send(stream, chunk)` for what is kept but not yet sent, when enough is pending, the
  // interval since the last event has passed, or `force`.
  void Flush(Clock::time_point now, bool force,
             const std::function<void(int stream, std::string_view chunk)>& send);

  // When Flush would next send on time alone (nullopt: nothing pending).
  std::optional<Clock::time_point> NextFlush() const;

  const std::string& kept(int stream) const { return streams_[stream - 1].kept; }
  bool truncated(int stream) const { return streams_[stream - 1].truncated; }

 private:
  struct Stream {
    std::string kept;
    bool truncated = false;
    size_t sent = 0;  // bytes of `kept` already sent in output events
  };
  size_t Pending() const;

  uint64_t max_bytes_;
  Clock::time_point last_flush_;
  Stream streams_[2];
};

// Appends `data` to `tail`, keeping only its last `max_bytes` (stderr outside runs, kept for
// the message when a worker fails to start).
void AppendTail(std::string& tail, std::string_view data, size_t max_bytes);

}  // namespace sandbox::agent
