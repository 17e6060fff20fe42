#include "runtime/metrics/registry.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

namespace sandbox::metrics::registry_test {
namespace {

const Sample* Find(const FamilySnapshot& family, const std::vector<std::string>& values) {
  for (const auto& sample : family.samples) {
    if (sample.label_values == values) return &sample;
  }
  return nullptr;
}

TEST_CASE("names follow the Prometheus data model [unit]", "[unit]") {
  CHECK(ValidMetricName("mcp_sandbox_tool_calls_total"));
  CHECK(ValidMetricName("a:b_c"));
  CHECK_FALSE(ValidMetricName(""));
  CHECK_FALSE(ValidMetricName("9lives"));
  CHECK_FALSE(ValidMetricName("has-dash"));
  CHECK(ValidLabelName("backend"));
  CHECK_FALSE(ValidLabelName("__reserved"));
  CHECK_FALSE(ValidLabelName("a:b"));
}

TEST_CASE("counters only go up and keep one series per label set [unit]", "[unit]") {
  Registry registry;
  auto& calls = registry.AddCounter("calls_total", "Calls.", {"tool", "outcome"});
  calls.Labels({"run", "ok"}).Inc();
  calls.Labels({"run", "ok"}).Inc(2);
  calls.Labels({"run", "timeout"}).Inc();
  calls.Labels({"run", "ok"}).Inc(-5);                                        // ignored
  calls.Labels({"run", "ok"}).Inc(std::numeric_limits<double>::quiet_NaN());  // ignored
  auto families = registry.Collect();
  REQUIRE(families.size() == 1);
  CHECK(families[0].type == MetricType::kCounter);
  REQUIRE(families[0].samples.size() == 2);
  CHECK(Find(families[0], {"run", "ok"})->value == 3);
  CHECK(Find(families[0], {"run", "timeout"})->value == 1);
}

TEST_CASE("a family past its label-set bound folds new sets into one [unit]", "[unit]") {
  Registry registry;
  auto& family = registry.AddCounter("by_id_total", "Unbounded on purpose.", {"id"});
  for (size_t i = 0; i < FamilyBase::kMaxChildren + 50; ++i) {
    family.Labels({"id-" + std::to_string(i)}).Inc();
  }
  auto snapshot = registry.Collect()[0];
  CHECK(snapshot.samples.size() == FamilyBase::kMaxChildren + 1);
  const Sample* other = Find(snapshot, {"other"});
  REQUIRE(other != nullptr);
  CHECK(other->value == 50);
}

TEST_CASE("a gauge adds what its live trackers read [unit]", "[unit]") {
  Registry registry;
  auto& live = registry.AddGauge("live", "Live things.", {"backend"});
  live.Labels({"namespace"}).Set(1);
  double a = 2;
  double b = 5;
  {
    GaugeTracker first = live.Labels({"namespace"}).Track([&a] { return a; });
    GaugeTracker second = live.Labels({"namespace"}).Track([&b] { return b; });
    CHECK(registry.Collect()[0].samples[0].value == 8);
    a = 3;
    CHECK(registry.Collect()[0].samples[0].value == 9);
    GaugeTracker moved = std::move(second);
    CHECK(registry.Collect()[0].samples[0].value == 9);
  }
  // Trackers gone: their functions are no longer called (a and b may be gone too).
  CHECK(registry.Collect()[0].samples[0].value == 1);
}

TEST_CASE("histograms count each value in the first bucket that holds it [unit]", "[unit]") {
  Registry registry;
  auto& seconds = registry.AddHistogram("took_seconds", "Time.", {}, {0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 1.0, 5.0, 100.0}) seconds.Labels().Observe(v);
  seconds.Labels().Observe(std::nan(""));  // ignored
  auto snapshot = registry.Collect()[0];
  REQUIRE(snapshot.samples.size() == 1);
  const Sample& sample = snapshot.samples[0];
  CHECK(sample.bucket_counts == std::vector<uint64_t>{2, 2, 1, 1});  // le 0.1, 1, 10, +Inf
  CHECK(sample.count == 6);
  CHECK(sample.sum == Approx(106.65));
  CHECK(snapshot.bounds == std::vector<double>{0.1, 1, 10});
}

TEST_CASE("concurrent updates are all counted [unit]", "[unit]") {
  Registry registry;
  auto& counter = registry.AddCounter("hits_total", "Hits.", {"kind"});
  auto& histogram = registry.AddHistogram("hit_seconds", "Hit time.", {}, {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.Labels({i % 2 == 0 ? "even" : "odd"}).Inc();
        histogram.Labels().Observe(0.5);
        if (i % 1000 == 0) (void)registry.Collect();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto families = registry.Collect();
  CHECK(Find(families[0], {"even"})->value == 20000);
  CHECK(Find(families[0], {"odd"})->value == 20000);
  CHECK(families[1].samples[0].count == 40000);
  CHECK(families[1].samples[0].sum == 20000);
}

TEST_CASE("collectors add their families after the registered ones [unit]", "[unit]") {
  Registry registry;
  registry.AddGauge("first", "First.");
  registry.AddCollector([] {
    FamilySnapshot family;
    family.name = "collected";
    family.help = "From a collector.";
    return std::vector<FamilySnapshot>{family};
  });
  auto families = registry.Collect();
  REQUIRE(families.size() == 2);
  CHECK(families[0].name == "first");
  CHECK(families[1].name == "collected");
}

}  // namespace
}  // namespace sandbox::metrics::registry_test
