// The standard process_* metrics of the server itself, read from /proc/self at each scrape, as
// the official Prometheus clients export them (CPU seconds, resident and virtual memory, open
// and maximum file descriptors, start time). Linux only; a figure that cannot be read is left
// out of the scrape rather than reported as 0.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "runtime/metrics/registry.h"

namespace sandbox::metrics {

struct ProcessFigures {
  std::optional<double> cpu_seconds;  // user + system
  std::optional<double> resident_bytes;
  std::optional<double> virtual_bytes;
  std::optional<double> open_fds;
  std::optional<double> max_fds;
  std::optional<double> start_time_seconds;  // since the epoch
};

// The figures of /proc/self now.
ProcessFigures ReadProcessFigures();
// Parses /proc/<pid>/stat (proc(5)): cpu seconds, virtual and resident bytes, and the start
// time in clock ticks after boot, from the fields after the command name (which may hold
// spaces and parentheses: the last ')' ends it). `boot_time_s` is /proc/stat's btime.
ProcessFigures ParseProcStat(std::string_view stat, double ticks_per_second, double page_bytes,
                             std::optional<double> boot_time_s);

// The families a registry's collector returns (AddCollector(CollectProcessMetrics)).
std::vector<FamilySnapshot> ProcessFamilies(const ProcessFigures& figures);
std::vector<FamilySnapshot> CollectProcessMetrics();

}  // namespace sandbox::metrics
