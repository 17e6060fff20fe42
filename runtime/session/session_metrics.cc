#include "runtime/session/session_metrics.h"

#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/session_manager.h"

namespace sandbox {

SessionMetricsFeed FeedSessionMetrics(SessionManager& sessions) {
  SessionMetricsFeed feed;
  feed.live = metrics::TrackLiveSessions(sessions.backend().name(), [&sessions] {
    return static_cast<double>(sessions.SessionCount());
  });
  // Reads each saved session's metadata (as sandbox_list_sessions does): a few microseconds
  // per hibernated session, nothing without hibernation.
  feed.hibernated = metrics::TrackHibernatedSessions(sessions.backend().name(), [&sessions] {
    return static_cast<double>(sessions.HibernatedCount());
  });
  feed.pool_ready = metrics::TrackPoolReady([&sessions] {
    auto pool = sessions.PoolStatus();
    return pool ? static_cast<double>(pool->ready) : 0.0;
  });
  feed.pool_size = metrics::TrackPoolSize([&sessions] {
    auto pool = sessions.PoolStatus();
    return pool ? static_cast<double>(pool->size) : 0.0;
  });
  return feed;
}

void CountRunEnd(std::string_view backend, const RunResult& run) {
  if (run.timed_out) {
    metrics::RunTimedOut(backend);
  } else if (run.oom) {
    metrics::RunOomKilled(backend);
  } else if (run.cancelled) {
    metrics::RunCancelled(backend);
  }
}

}  // namespace sandbox
