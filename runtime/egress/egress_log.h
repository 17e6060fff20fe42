// EgressLog: what one session's traffic makes the server log, held to a budget. A sandbox
// decides how many connections it opens, so it must not decide how much the server writes: a
// flood of 600 connections used to write 600 warning lines (about 80 KB), more than a pipe
// holds, and a client that reads the server's stderr slowly then held up every session.
// The first `lines` events of each interval are written one by one (what a user debugging pip
// wants to see); the rest are counted and written as one summary line when the interval ends.
//
// Thread-safe: tunnels log from their own threads. The owner calls Flush() when it is due (the
// proxy's channel reader wakes for it); the destructor writes what is still counted.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <spdlog/common.h>

namespace sandbox::egress {

class EgressLog {
 public:
  using Clock = std::chrono::steady_clock;
  struct Budget {
    int lines = 8;  // written one by one per interval
    Clock::duration interval = std::chrono::seconds(10);
  };

  EgressLog(std::string session_id, Budget budget);
  ~EgressLog();
  EgressLog(const EgressLog&) = delete;
  EgressLog& operator=(const EgressLog&) = delete;

  // One event: "egress <session>: <text>" at `level` while the interval's budget lasts; after
  // that counted under `kind` ("refused (503)", "tunnel opened", ...) for the summary.
  void Write(spdlog::level::level_enum level, std::string_view kind, std::string_view text,
             Clock::time_point now = Clock::now());
  // Writes the summary of an interval that has ended. Returns when the next summary is due, or
  // nullopt when nothing is counted.
  std::optional<Clock::time_point> Flush(Clock::time_point now = Clock::now());

 private:
  void WriteSummaryLocked(Clock::time_point now);

  const std::string session_id_;
  const Budget budget_;
  std::mutex mutex_;
  std::optional<Clock::time_point> interval_start_;
  int written_ = 0;
  spdlog::level::level_enum counted_level_ = spdlog::level::trace;
  std::map<std::string, uint64_t, std::less<>> counted_;
};

}  // namespace sandbox::egress
