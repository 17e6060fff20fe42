// SANDBOX_USAGE=off: the event hooks count nothing while recording is off, and count again once
// it is back on; the gauges (read at scrape) answer either way. The registry is process-wide and
// shared by every case of this executable, so the case uses a tool name of its own and compares
// before with after rather than assuming a fresh registry.
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/metrics/sandbox_metrics.h"

namespace sandbox::metrics::recording_test {
namespace {

// The value of the series line starting with `series ` in a scrape, or -1 when absent.
double SeriesValue(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST_CASE("recording off: hooks count nothing, and count again once it is on [unit]", "[unit]") {
  const std::string calls =
      "mcp_sandbox_tool_calls_total{tool=\"recording_test_tool\",outcome=\"ok\"}";
  ToolCallFinished("recording_test_tool", "ok", 0.01);
  double before = SeriesValue(Scrape(), calls);
  REQUIRE(before >= 1);
  SetRecording(false);
  ToolCallFinished("recording_test_tool", "ok", 0.01);
  SessionStarted("recording-test-backend");
  double off = SeriesValue(Scrape(), calls);
  bool started_series =
      Scrape().find("mcp_sandbox_sessions_started_total{backend=\"recording-test-backend\"}") !=
      std::string::npos;
  SetRecording(true);
  CHECK(off == before);
  CHECK_FALSE(started_series);
  {
    auto tracker = TrackHibernatedSessions("recording-test-backend", [] { return 3.0; });
    CHECK(SeriesValue(Scrape(),
                      "mcp_sandbox_sessions_hibernated{backend=\"recording-test-backend\"}") == 3);
  }
  ToolCallFinished("recording_test_tool", "ok", 0.01);
  CHECK(SeriesValue(Scrape(), calls) == before + 1);
}

// ToolCallFinished keeps the series it counts in per thread (a few dozen pairs, then a lookup
// each time): every call still lands in its own (tool, outcome) series, from any thread, past
// that bound too.
TEST_CASE("tool calls count in their own series from every thread, past the kept ones [unit]",
          "[unit]") {
  constexpr int kOutcomes = 70;  // above the 64 pairs a thread keeps
  auto outcome = [](int i) {
    std::string word = "cached_series_test_";
    for (int n = i + 1; n > 0; n /= 26) word += static_cast<char>('a' + n % 26);
    return word;
  };
  auto count_all = [&] {
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < kOutcomes; ++i) ToolCallFinished("cached_series_tool", outcome(i), 0.02);
    }
  };
  count_all();
  std::thread other(count_all);
  other.join();
  std::string text = Scrape();
  for (int i = 0; i < kOutcomes; ++i) {
    INFO(outcome(i));
    CHECK(SeriesValue(text, "mcp_sandbox_tool_calls_total{tool=\"cached_series_tool\",outcome=\"" +
                                outcome(i) + "\"}") == 4);
  }
  CHECK(SeriesValue(text,
                    "mcp_sandbox_tool_call_duration_seconds_count{tool=\"cached_series_tool\"}") ==
        4 * kOutcomes);
}

}  // namespace
}  // namespace sandbox::metrics::recording_test
