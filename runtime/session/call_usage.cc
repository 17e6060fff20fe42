#include "runtime/session/call_usage.h"

#include <algorithm>

namespace sandbox {

CallUsage::CallUsage(Sandbox& sandbox) : sandbox_(sandbox), peak_(sandbox.StartMemoryPeakWindow()) {
  // Usage() is a few cgroup or /proc reads, except on the Docker backend when the container's
  // cgroup is out of sight (a remote daemon): there it is the Engine API's stats, which sample
  // for about a second. No per-call figures there rather than two seconds added to every run.
  measured_ = peak_ || sandbox_.backend_name() != "docker";
  if (measured_) cpu_before_ = sandbox_.Usage().cpu_seconds;
}

void CallUsage::Finish(RunResult& run) {
  if (!measured_) return;
  SandboxUsage after = sandbox_.Usage();
  run.cpu_seconds = std::max(0.0, after.cpu_seconds - cpu_before_);
  std::optional<uint64_t> call_peak = peak_ ? peak_() : std::nullopt;
  if (call_peak) {
    run.memory_peak_bytes = *call_peak;
    run.memory_peak_scope = "call";
  } else if (after.memory_peak_bytes > 0) {
    run.memory_peak_bytes = after.memory_peak_bytes;
    run.memory_peak_scope = "session";
  }
}

}  // namespace sandbox
