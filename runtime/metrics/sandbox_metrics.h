// The server's metrics: every family /metrics exposes, registered once in one process-wide
// registry, and the one-line hooks the rest of the server calls where an event happens. Names
// follow Prometheus practice: one prefix (mcp_sandbox_), base units (seconds, bytes), counters
// ending in _total; labels only from bounded sets (backend, tool, outcome, reason, HTTP status),
// never a session id or a path. docs/metrics.md lists them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "runtime/metrics/registry.h"

namespace sandbox::metrics {

// The registry /metrics renders: the families below, then the process_* figures.
Registry& Global();
// Global() rendered in the text format, ready to serve (exposition.h's content type).
std::string Scrape();

// SANDBOX_USAGE: off makes the event hooks below count nothing (for the benchmark that weighs
// them); the gauges read at scrape time still answer. HTTP connections and in-flight requests
// stay counted either way (an open-connection gauge must see both ends).
void SetRecording(bool on);

// mcp_sandbox_info{replica,version,backend} 1, and the backend's series created at 0 so that
// rate() and alerts see them before the first event.
void SetServerInfo(std::string_view replica, std::string_view version, std::string_view backend);

// Sessions.
void SessionStarted(std::string_view backend);
void SessionClosed(std::string_view backend);
void SessionExpired(std::string_view backend);  // also counted as closed, by SessionClosed
// mcp_sandbox_sessions_live{backend} reads `count` at each scrape while the tracker lives.
[[nodiscard]] GaugeTracker TrackLiveSessions(std::string_view backend,
                                             std::function<double()> count);
// mcp_sandbox_sessions_hibernated{backend} likewise (saved sessions not live; 0 without
// hibernation).
[[nodiscard]] GaugeTracker TrackHibernatedSessions(std::string_view backend,
                                                   std::function<double()> count);
// The warm pool: its target size and ready sandboxes read at each scrape; claims and misses
// (a poolable session that found the pool empty) counted as they happen.
[[nodiscard]] GaugeTracker TrackPoolReady(std::function<double()> ready);
[[nodiscard]] GaugeTracker TrackPoolSize(std::function<double()> size);
void PoolClaimed();
void PoolMissed();

// A sandbox that did not start: `reason` is one of "backend", "agent", "egress".
void SandboxStartFailed(std::string_view backend, std::string_view reason);

// A run's end as the session manager saw it.
void RunTimedOut(std::string_view backend);
void RunOomKilled(std::string_view backend);
void RunCancelled(std::string_view backend);

// One tools/call: `outcome` is "ok", "cancelled" or an error code name (bounded: the server's
// own words); anything else is counted as "error".
void ToolCallFinished(std::string_view tool, std::string_view outcome, double seconds);

// Egress: a tunnel opened (allowed) or a request refused; bytes carried, both directions.
void EgressConnection(bool allowed);
void EgressBytes(uint64_t bytes);

// HTTP: a connection accepted (counted, and open until HttpConnectionClosed); a request
// refused with `status` before it was served; requests being served now.
void HttpConnectionOpened();
void HttpConnectionClosed();
void HttpRefused(int status);
class HttpRequestInFlight {
 public:
  HttpRequestInFlight();
  ~HttpRequestInFlight();
  HttpRequestInFlight(const HttpRequestInFlight&) = delete;
  HttpRequestInFlight& operator=(const HttpRequestInFlight&) = delete;
};

}  // namespace sandbox::metrics
