#include "runtime/egress/egress_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sandbox::egress {

EgressLog::EgressLog(std::string session_id, Budget budget)
    : session_id_(std::move(session_id)), budget_(budget) {}

EgressLog::~EgressLog() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!counted_.empty()) WriteSummaryLocked(Clock::now());
}

void EgressLog::Write(spdlog::level::level_enum level, std::string_view kind, std::string_view text,
                      Clock::time_point now) {
  if (!spdlog::default_logger_raw()->should_log(level)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (interval_start_ && now - *interval_start_ >= budget_.interval) {
    if (!counted_.empty()) WriteSummaryLocked(now);
    interval_start_.reset();
  }
  if (!interval_start_) {
    interval_start_ = now;
    written_ = 0;
  }
  if (written_ < budget_.lines) {
    ++written_;
    spdlog::log(level, "egress {}: {}", session_id_, text);
    return;
  }
  counted_level_ = std::max(counted_level_, level);
  auto it = counted_.find(kind);
  if (it == counted_.end()) it = counted_.emplace(std::string(kind), 0).first;
  ++it->second;
}

std::optional<EgressLog::Clock::time_point> EgressLog::Flush(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!interval_start_) return std::nullopt;
  if (now - *interval_start_ >= budget_.interval) {
    if (!counted_.empty()) WriteSummaryLocked(now);
    interval_start_.reset();
    return std::nullopt;
  }
  if (counted_.empty()) return std::nullopt;
  return *interval_start_ + budget_.interval;
}

void EgressLog::WriteSummaryLocked(Clock::time_point now) {
  uint64_t total = 0;
  std::string kinds;
  for (const auto& [kind, count] : counted_) {
    total += count;
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", count, kind);
  }
  double seconds =
      interval_start_ ? std::chrono::duration<double>(now - *interval_start_).count() : 0.0;
  spdlog::log(counted_level_,
              "egress {}: {} more connection events in {:.1f} s, not logged one by one: {}",
              session_id_, total, seconds, kinds);
  counted_.clear();
  counted_level_ = spdlog::level::trace;
}

}  // namespace sandbox::egress
