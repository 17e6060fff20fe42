#include "runtime/metrics/sandbox_metrics.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "runtime/metrics/exposition.h"
#include "runtime/metrics/process_metrics.h"

namespace sandbox::metrics {

namespace {

// Tool calls last from milliseconds (a stat) to minutes (a pip install, a long run).
const std::vector<double> kCallSecondsBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                2.5,   5,    10,    30,   60,  120,  300};

// The HTTP statuses a request is refused with before it is served (http_admission.h,
// http_connection.cc, the connection caps); any other is counted as "other".
constexpr int kRefusalStatuses[] = {400, 401, 403, 404, 405, 406, 413, 415, 431, 503};

struct Families {
  Registry registry;
  Family<Gauge>& info = registry.AddGauge("mcp_sandbox_info",
                                          "The server's replica id, version and backend (value 1).",
                                          {"replica", "version", "backend"});
  Family<Gauge>& sessions_live = registry.AddGauge(
      "mcp_sandbox_sessions_live", "Sessions open now (not the warm pool's).", {"backend"});
  Family<Gauge>& sessions_hibernated = registry.AddGauge(
      "mcp_sandbox_sessions_hibernated",
      "Sessions saved to disk with no sandbox running, resumed by the next call naming them.",
      {"backend"});
  Family<Counter>& sessions_started =
      registry.AddCounter("mcp_sandbox_sessions_started_total", "Sessions created.", {"backend"});
  Family<Counter>& sessions_closed =
      registry.AddCounter("mcp_sandbox_sessions_closed_total",
                          "Sessions closed, for any reason (expired ones included).", {"backend"});
  Family<Counter>& sessions_expired =
      registry.AddCounter("mcp_sandbox_sessions_expired_total",
                          "Sessions closed for being idle too long.", {"backend"});
  Family<Gauge>& pool_size = registry.AddGauge("mcp_sandbox_pool_size",
                                               "The warm pool's target size (SANDBOX_POOL_SIZE).");
  Family<Gauge>& pool_ready = registry.AddGauge(
      "mcp_sandbox_pool_ready", "Warm sandboxes started and waiting to be claimed.");
  Family<Counter>& pool_claims = registry.AddCounter(
      "mcp_sandbox_pool_claims_total", "Sessions that took a warm sandbox from the pool.");
  Family<Counter>& pool_misses =
      registry.AddCounter("mcp_sandbox_pool_misses_total",
                          "Sessions of the pool's kind started cold because the pool was empty.");
  Family<Counter>& start_failures = registry.AddCounter(
      "mcp_sandbox_sandbox_start_failures_total",
      "Sandboxes that failed to start, by reason (backend, agent, egress).", {"backend", "reason"});
  Family<Counter>& runs_timed_out = registry.AddCounter(
      "mcp_sandbox_runs_timed_out_total", "Runs stopped by their time limit.", {"backend"});
  Family<Counter>& runs_oom_killed =
      registry.AddCounter("mcp_sandbox_runs_oom_killed_total",
                          "Runs killed by the session's memory limit.", {"backend"});
  Family<Counter>& runs_cancelled = registry.AddCounter(
      "mcp_sandbox_runs_cancelled_total", "Runs cancelled by the client.", {"backend"});
  Family<Counter>& tool_calls =
      registry.AddCounter("mcp_sandbox_tool_calls_total",
                          "Tool calls answered, by tool and outcome.", {"tool", "outcome"});
  Family<Histogram>& tool_call_seconds =
      registry.AddHistogram("mcp_sandbox_tool_call_duration_seconds",
                            "How long tool calls took, by tool.", {"tool"}, kCallSecondsBounds);
  Family<Counter>& egress_connections = registry.AddCounter(
      "mcp_sandbox_egress_connections_total",
      "Egress requests from sandboxes: tunnels opened (allowed) and requests refused.", {"result"});
  Family<Counter>& egress_bytes = registry.AddCounter(
      "mcp_sandbox_egress_bytes_total", "Bytes carried by egress tunnels, both directions.");
  Family<Counter>& http_connections =
      registry.AddCounter("mcp_sandbox_http_connections_total", "HTTP connections accepted.");
  Family<Gauge>& http_connections_open =
      registry.AddGauge("mcp_sandbox_http_connections_open", "HTTP connections open now.");
  Family<Counter>& http_refusals =
      registry.AddCounter("mcp_sandbox_http_refusals_total",
                          "HTTP requests refused before they were served, by status.", {"status"});
  Family<Gauge>& http_in_flight =
      registry.AddGauge("mcp_sandbox_http_requests_in_flight", "HTTP requests being served now.");

  Families() {
    // Series that exist from the start (at 0), so rate() and absent() behave from the first
    // scrape on.
    pool_claims.Labels();
    pool_misses.Labels();
    egress_connections.Labels({"allowed"});
    egress_connections.Labels({"refused"});
    egress_bytes.Labels();
    http_connections.Labels();
    http_connections_open.Labels();
    http_in_flight.Labels();
    for (int status : {401, 403, 413, 431, 503}) http_refusals.Labels({std::to_string(status)});
    registry.AddCollector(CollectProcessMetrics);
  }
};

Families& F() {
  static Families* families = new Families();  // never destroyed: hooks may run at exit
  return *families;
}

std::string S(std::string_view text) { return std::string(text); }

// An outcome is a short snake_case word of the server's own; anything else is "error".
std::string_view BoundedOutcome(std::string_view outcome) {
  bool word = !outcome.empty() && outcome.size() <= 40 &&
              std::all_of(outcome.begin(), outcome.end(),
                          [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
  return word ? outcome : std::string_view("error");
}

// The two series one tools/call counts in, found once per thread for each (tool, outcome):
// looking them up builds the label vectors and searches each family's map under its lock,
// which was most of what counting a call cost (a few µs per call, docs/benchmarks.md). A
// series is never removed and a label set always finds the same one (the fold-over included),
// so a kept pointer stays right. Tools and outcomes are the server's own words, a few dozen
// pairs; past kMaxCachedCallSeries a thread looks the rest up each time.
struct CallSeries {
  std::string tool;
  std::string outcome;
  Counter* calls;
  Histogram* seconds;
};
constexpr size_t kMaxCachedCallSeries = 64;

CallSeries LookUpCallSeries(std::string_view tool, std::string_view outcome) {
  auto& f = F();
  return {S(tool), S(outcome), &f.tool_calls.Labels({S(tool), S(outcome)}),
          &f.tool_call_seconds.Labels({S(tool)})};
}

CallSeries& CallSeriesFor(std::string_view tool, std::string_view outcome) {
  thread_local std::vector<CallSeries> cached;
  thread_local CallSeries uncached;
  for (auto& series : cached) {
    if (series.tool == tool && series.outcome == outcome) return series;
  }
  if (cached.size() < kMaxCachedCallSeries) {
    return cached.emplace_back(LookUpCallSeries(tool, outcome));
  }
  uncached = LookUpCallSeries(tool, outcome);
  return uncached;
}

// SANDBOX_USAGE=off: the event hooks below count nothing (the gauges are still read at scrape).
std::atomic<bool> recording{true};
bool Off() { return !recording.load(std::memory_order_relaxed); }

}  // namespace

void SetRecording(bool on) { recording = on; }

Registry& Global() { return F().registry; }

std::string Scrape() { return RenderText(Global().Collect()); }

void SetServerInfo(std::string_view replica, std::string_view version, std::string_view backend) {
  auto& f = F();
  f.info.Labels({S(replica), S(version), S(backend)}).Set(1);
  std::vector<std::string> b = {S(backend)};
  f.sessions_started.Labels(b);
  f.sessions_closed.Labels(b);
  f.sessions_expired.Labels(b);
  f.runs_timed_out.Labels(b);
  f.runs_oom_killed.Labels(b);
  f.runs_cancelled.Labels(b);
}

void SessionStarted(std::string_view backend) {
  if (Off()) return;
  F().sessions_started.Labels({S(backend)}).Inc();
}
void SessionClosed(std::string_view backend) {
  if (Off()) return;
  F().sessions_closed.Labels({S(backend)}).Inc();
}
void SessionExpired(std::string_view backend) {
  if (Off()) return;
  F().sessions_expired.Labels({S(backend)}).Inc();
}

GaugeTracker TrackLiveSessions(std::string_view backend, std::function<double()> count) {
  return F().sessions_live.Labels({S(backend)}).Track(std::move(count));
}
GaugeTracker TrackHibernatedSessions(std::string_view backend, std::function<double()> count) {
  return F().sessions_hibernated.Labels({S(backend)}).Track(std::move(count));
}
GaugeTracker TrackPoolReady(std::function<double()> ready) {
  return F().pool_ready.Labels().Track(std::move(ready));
}
GaugeTracker TrackPoolSize(std::function<double()> size) {
  return F().pool_size.Labels().Track(std::move(size));
}
void PoolClaimed() {
  if (Off()) return;
  F().pool_claims.Labels().Inc();
}
void PoolMissed() {
  if (Off()) return;
  F().pool_misses.Labels().Inc();
}

void SandboxStartFailed(std::string_view backend, std::string_view reason) {
  if (Off()) return;
  F().start_failures.Labels({S(backend), S(reason)}).Inc();
}

void RunTimedOut(std::string_view backend) {
  if (Off()) return;
  F().runs_timed_out.Labels({S(backend)}).Inc();
}
void RunOomKilled(std::string_view backend) {
  if (Off()) return;
  F().runs_oom_killed.Labels({S(backend)}).Inc();
}
void RunCancelled(std::string_view backend) {
  if (Off()) return;
  F().runs_cancelled.Labels({S(backend)}).Inc();
}

void ToolCallFinished(std::string_view tool, std::string_view outcome, double seconds) {
  if (Off()) return;
  CallSeries& series = CallSeriesFor(tool, BoundedOutcome(outcome));
  series.calls->Inc();
  series.seconds->Observe(seconds);
}

void EgressConnection(bool allowed) {
  if (Off()) return;
  F().egress_connections.Labels({allowed ? "allowed" : "refused"}).Inc();
}
void EgressBytes(uint64_t bytes) {
  if (Off()) return;
  F().egress_bytes.Labels().Inc(static_cast<double>(bytes));
}

void HttpConnectionOpened() {
  auto& f = F();
  f.http_connections.Labels().Inc();
  f.http_connections_open.Labels().Add(1);
}
void HttpConnectionClosed() { F().http_connections_open.Labels().Add(-1); }

void HttpRefused(int status) {
  if (Off()) return;
  bool known = std::find(std::begin(kRefusalStatuses), std::end(kRefusalStatuses), status) !=
               std::end(kRefusalStatuses);
  F().http_refusals.Labels({known ? std::to_string(status) : "other"}).Inc();
}

HttpRequestInFlight::HttpRequestInFlight() { F().http_in_flight.Labels().Add(1); }
HttpRequestInFlight::~HttpRequestInFlight() { F().http_in_flight.Labels().Add(-1); }

}  // namespace sandbox::metrics
