// What the session manager feeds the metrics registry (runtime/metrics/sandbox_metrics.h): the
// gauges read from a SessionManager at each scrape (sessions live and hibernated, the warm
// pool's ready and target size) and the count of a run's end (timed out, OOM-killed, cancelled).
// The counters of events (started, closed, expired, start failures) are one-line hooks in the
// manager.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/metrics/registry.h"
#include "runtime/run.h"

namespace sandbox {

class SessionManager;

// Keeps the gauges reading `sessions` while it lives; destroy it before the manager.
struct SessionMetricsFeed {
  metrics::GaugeTracker live;
  metrics::GaugeTracker hibernated;
  metrics::GaugeTracker pool_ready;
  metrics::GaugeTracker pool_size;
};
[[nodiscard]] SessionMetricsFeed FeedSessionMetrics(SessionManager& sessions);

// The ids of the sessions saved in `dir` (SavedSessionsConfig::dir, a directory per session id):
// one readdir, not each session's metadata, so a scrape stays cheap with thousands saved (reading
// 2 000 metadata files took ~60 ms). A saved session past its TTL counts until the reaper
// deletes it.
std::vector<std::string> SavedSessionIds(const std::string& dir);

// Counts a run that timed out, was OOM-killed or cancelled (at most one of them: a timeout
// that also hit the memory limit is a timeout, as the run's result says).
void CountRunEnd(std::string_view backend, const RunResult& run);

}  // namespace sandbox
