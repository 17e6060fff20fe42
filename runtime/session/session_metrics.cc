#include "runtime/session/session_metrics.h"

#include <dirent.h>

#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_manager.h"

namespace sandbox {

SessionMetricsFeed FeedSessionMetrics(SessionManager& sessions) {
  SessionMetricsFeed feed;
  feed.live = metrics::TrackLiveSessions(sessions.backend().name(), [&sessions] {
    return static_cast<double>(sessions.SessionCount());
  });
  // One readdir of the saved sessions (SavedSessionIds); nothing without hibernation.
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

std::vector<std::string> SavedSessionIds(const std::string& dir) {
  std::vector<std::string> ids;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return ids;
  while (struct dirent* entry = ::readdir(handle)) {
    if (ParseSessionId(entry->d_name)) ids.emplace_back(entry->d_name);
  }
  ::closedir(handle);
  return ids;
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
