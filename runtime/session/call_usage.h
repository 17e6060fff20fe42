// What one run used, measured around it from the session's sandbox: CPU seconds (the sandbox's
// cgroup or process tree, before and after) and the memory peak, reset when the run starts
// where the kernel allows it (runtime/cgroup/memory_peak.h) and otherwise the session's peak so
// far, said as such. The whole sandbox is measured, so work a session's own background
// processes do during the call counts too.
#pragma once

#include <functional>
#include <optional>

#include "runtime/backend.h"
#include "runtime/run.h"

namespace sandbox {

class CallUsage {
 public:
  // Starts measuring (before the run is sent to the agent).
  explicit CallUsage(Sandbox& sandbox);
  // Fills the run's cpu_seconds, memory_peak_bytes and memory_peak_scope.
  void Finish(RunResult& run);

 private:
  Sandbox& sandbox_;
  std::function<std::optional<uint64_t>()> peak_;
  bool measured_ = false;
  double cpu_before_ = 0;
};

}  // namespace sandbox
