#include "runtime/metrics/exposition.h"

#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "tests/support/test_support.h"

namespace sandbox::metrics::exposition_test {
namespace {

// Runs Prometheus's own parser and linter over `text`; its complaints, or "" when it has none.
// Skips when promtool is missing (Debian package prometheus, in TEST_PACKAGES).
std::string PromtoolProblems(const std::string& text) {
  if (testing::RunShell("command -v promtool >/dev/null") != 0) {
    testing::SkipTest("promtool is not installed (apt-get install prometheus)");
  }
  testing::TempDir dir;
  std::string path = dir.Join("metrics.txt");
  REQUIRE(WriteFile(path, text));
  std::string output;
  int status = testing::RunShell("promtool check metrics < " + path + " 2>&1", &output);
  if (status != 0 && output.empty())
    output = "promtool failed with status " + std::to_string(status);
  return status == 0 ? "" : output;
}

// A counter with escapes in its help and labels, a histogram and a gauge without labels.
std::vector<FamilySnapshot> DemoFamilies() {
  FamilySnapshot counter;
  counter.name = "demo_calls_total";
  counter.help = "Calls, with a backslash \\ and a\nline feed.";
  counter.type = MetricType::kCounter;
  counter.label_names = {"tool", "outcome"};
  Sample ok;
  ok.label_values = {"run", "ok"};
  ok.value = 3;
  Sample odd;
  odd.label_values = {"say \"hi\"\\", "line\nfeed"};
  odd.value = 0.5;
  counter.samples = {ok, odd};

  FamilySnapshot histogram;
  histogram.name = "demo_call_duration_seconds";
  histogram.help = "Call time.";
  histogram.type = MetricType::kHistogram;
  histogram.label_names = {"tool"};
  histogram.bounds = {0.25, 1};
  Sample run;
  run.label_values = {"run"};
  run.bucket_counts = {1, 2, 3};
  run.count = 6;
  run.sum = 12.5;
  histogram.samples = {run};

  FamilySnapshot gauge;
  gauge.name = "demo_ready";
  gauge.help = "Ready.";
  gauge.type = MetricType::kGauge;
  Sample ready;
  ready.value = 2;
  gauge.samples = {ready};
  return {counter, histogram, gauge};
}

TEST_CASE("the text format writes help, type, labels and histogram lines [unit]", "[unit]") {
  std::string text = RenderText(DemoFamilies());
  CHECK(text ==
        "# HELP demo_calls_total Calls, with a backslash \\\\ and a\\nline feed.\n"
        "# TYPE demo_calls_total counter\n"
        "demo_calls_total{tool=\"run\",outcome=\"ok\"} 3\n"
        "demo_calls_total{tool=\"say \\\"hi\\\"\\\\\",outcome=\"line\\nfeed\"} 0.5\n"
        "# HELP demo_call_duration_seconds Call time.\n"
        "# TYPE demo_call_duration_seconds histogram\n"
        "demo_call_duration_seconds_bucket{tool=\"run\",le=\"0.25\"} 1\n"
        "demo_call_duration_seconds_bucket{tool=\"run\",le=\"1\"} 3\n"
        "demo_call_duration_seconds_bucket{tool=\"run\",le=\"+Inf\"} 6\n"
        "demo_call_duration_seconds_sum{tool=\"run\"} 12.5\n"
        "demo_call_duration_seconds_count{tool=\"run\"} 6\n"
        "# HELP demo_ready Ready.\n"
        "# TYPE demo_ready gauge\n"
        "demo_ready 2\n");
}

TEST_CASE("values are written as the format reads them [unit]", "[unit]") {
  CHECK(FormatValue(0) == "0");
  CHECK(FormatValue(3) == "3");
  CHECK(FormatValue(0.005) == "0.005");
  CHECK(FormatValue(1e21) == "1e+21");
  CHECK(FormatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(FormatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(FormatValue(std::nan("")) == "NaN");
  CHECK(std::stod(FormatValue(0.1 + 0.2)) == 0.1 + 0.2);  // round-trips
}

// [promtool], not [unit]: without promtool these skip, which ends the whole executable, and the
// [unit] tier runs as one process where promtool is missing (a release's build root).
TEST_CASE("the escaped demo families pass promtool", "[promtool]") {
  CHECK(PromtoolProblems(RenderText(DemoFamilies())).empty());
}

TEST_CASE("the server's own exposition passes promtool", "[promtool]") {
  SetServerInfo("r1", "0.1.0", "namespace");
  ToolCallFinished("sandbox_run_python", "ok", 0.02);
  ToolCallFinished("sandbox_run_python", "timeout", 2);
  ToolCallFinished("sandbox_run_python", "Not A Word!", 1);  // counted as "error"
  HttpRefused(401);
  HttpRefused(999);  // counted as "other"
  std::string text = Scrape();
  CHECK(text.find("mcp_sandbox_info{replica=\"r1\",version=\"0.1.0\",backend=\"namespace\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("mcp_sandbox_tool_calls_total{tool=\"sandbox_run_python\",outcome=\"error\"} "
                  "1\n") != std::string::npos);
  CHECK(text.find("mcp_sandbox_http_refusals_total{status=\"other\"} 1\n") != std::string::npos);
  CHECK(text.find("mcp_sandbox_runs_oom_killed_total{backend=\"namespace\"} 0\n") !=
        std::string::npos);
  CHECK(text.find("mcp_sandbox_tool_call_duration_seconds_bucket{tool=\"sandbox_run_python\","
                  "le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("process_resident_memory_bytes ") != std::string::npos);
  CHECK(PromtoolProblems(text).empty());
}

}  // namespace
}  // namespace sandbox::metrics::exposition_test
