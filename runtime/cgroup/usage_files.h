// The cgroup files read around every run (call_usage.h): the CPU counter, the OOM-kill count and
// the memory high-water mark, opened once when the session's group is made and read with
// pread(2) until the group is removed. Opening a cgroup file costs about 10 µs (a path walk and
// kernfs's open); reading an open one about 1 µs: the five reads a run makes went from ~55 µs
// to ~5 µs (docs/benchmarks.md). Each session holds three descriptors this way (v1:
// cpuacct.usage, memory.oom_control, memory.max_usage_in_bytes; v2: cpu.stat, memory.events,
// memory.peak), so 500 sessions hold 1 500; the server raises its RLIMIT_NOFILE soft limit to
// the hard one at start (cmd_serve.cc). A file that cannot be opened (a controller not mounted,
// memory.peak without a reset before Linux 6.12, a descriptor limit reached) reads as 0, or
// gives no per-call peak, as a missing file did before.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"
#include "runtime/cgroup/memory_peak.h"

namespace sandbox {

class CgroupUsageFiles {
 public:
  CgroupUsageFiles() = default;
  // v1: the session's group in the memory and the cpuacct hierarchies ("" for one not
  // mounted); v2: its one group, twice.
  static CgroupUsageFiles Open(bool v2, const std::string& memory_group,
                               const std::string& cpu_group);

  // cpuacct.usage (ns) or cpu.stat usage_usec, in seconds; 0 when unreadable.
  double CpuSeconds() const;
  // memory.oom_control or memory.events oom_kill; on v1 before Linux 4.13, which has no such
  // count, memory.failcnt (read by path: such kernels are rare).
  uint64_t OomKills() const;
  // The per-call peak window over the kept peak file (memory_peak.h).
  Result<MemoryPeakReader> StartMemoryPeakWindow() const;
  // v1: the largest mark seen just before a per-call reset (0 without a peak file).
  uint64_t PeakBeforeResets() const;

  // How many descriptors are held (at most 3).
  int open_files() const;
  // Closes them (the group is being removed); everything reads as 0 afterwards. A peak reader
  // still alive keeps its descriptor until it goes.
  void Close();

 private:
  bool v2_ = false;
  std::string memory_group_;
  Fd cpu_;
  Fd oom_;
  std::shared_ptr<MemoryPeakFile> peak_;
};

}  // namespace sandbox
