#include "runtime/session/call_usage.h"

#include <algorithm>
#include <cmath>

namespace sandbox {

CallUsage::CallUsage(Sandbox& sandbox) : sandbox_(sandbox), peak_(sandbox.StartMemoryPeakWindow()) {
  // Usage() is a few cgroup or /proc reads, except on the Docker backend when the container's
  // cgroup is out of sight (a remote daemon): there it is the Engine API's stats, which sample
  // for about a second. No per-call figures there rather than two seconds added to every run.
  measured_ = peak_ || sandbox_.backend_name() != "docker";
  if (measured_) cpu_before_ = sandbox_.CpuSeconds();
}

void CallUsage::Finish(RunResult& run) {
  if (!measured_) return;
  // The CPU figure and the call's peak are one file each; the whole Usage() (five or six files)
  // only where the session's peak must stand in for the call's.
  // The counters count whole nanoseconds or coarser (cgroup v1: ns, v2: µs, /proc: clock ticks),
  // but the difference of the two doubles they became carries binary noise into the reply
  // (0.00021489800000000503 for 214 898 ns): rounded to the nanosecond, it says what they said.
  double cpu = std::round((sandbox_.CpuSeconds() - cpu_before_) * 1e9) / 1e9;
  run.cpu_seconds = std::max(0.0, cpu);
  std::optional<uint64_t> call_peak = peak_ ? peak_() : std::nullopt;
  if (call_peak) {
    run.memory_peak_bytes = *call_peak;
    run.memory_peak_scope = "call";
  } else if (uint64_t session_peak = sandbox_.Usage().memory_peak_bytes; session_peak > 0) {
    run.memory_peak_bytes = session_peak;
    run.memory_peak_scope = "session";
  }
}

}  // namespace sandbox
