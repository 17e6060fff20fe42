#include "mcp/drain.h"

#include <fmt/format.h>

namespace sandbox::mcp {

DrainPlan::Step DrainPlan::OnSignal(Clock::time_point now) {
  if (draining_ || timeout_.count() <= 0) return Step::kStop;
  draining_ = true;
  deadline_ = now + timeout_;
  return Step::kDrain;
}

std::optional<std::string> DrainPlan::StopReason(size_t sessions_left,
                                                 Clock::time_point now) const {
  if (!draining_) return std::nullopt;
  if (sessions_left == 0) return std::string("no session left");
  if (now >= deadline_) {
    return fmt::format(
        "drain time-out reached with {} session(s) left; stopping them as any orderly stop does "
        "(hibernated, or closed with hibernation off)",
        sessions_left);
  }
  return std::nullopt;
}

}  // namespace sandbox::mcp
