// The metrics registry: counters, gauges and histograms grouped in families, each family one
// metric name with a fixed list of label names, after the Prometheus data model
// (prometheus.io/docs/concepts/metric_types). Label sets stay bounded: a family keeps at most
// kMaxChildren label sets and folds any further one into a single set whose values are all
// "other", so a caller passing unbounded values (a session id, a path) cannot grow memory or the
// scrape without bound. A scrape copies everything into plain snapshots (Collect) that
// exposition.h renders. Thread-safe; updates are lock-free atomics once a label set exists.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// One label set of a family, as read at a scrape.
struct Sample {
  std::vector<std::string> label_values;  // in the order of FamilySnapshot::label_names
  double value = 0;                       // counters and gauges
  std::vector<uint64_t> bucket_counts;    // histograms: per bound, NOT cumulative; +Inf last
  double sum = 0;                         // histograms
  uint64_t count = 0;                     // histograms
};

struct FamilySnapshot {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<std::string> label_names;
  std::vector<double> bounds;  // histograms: the upper bounds, ascending, without +Inf
  std::vector<Sample> samples;
};

// Whether `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name
// ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", which Prometheus reserves).
bool ValidMetricName(std::string_view name);
bool ValidLabelName(std::string_view name);

class Counter {
 public:
  // A negative or NaN increment is ignored: a counter only goes up.
  void Inc(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Keeps a function that a gauge adds to its value at every scrape, until destroyed. The
// destructor waits for a scrape calling the function to finish, so the function may capture
// what the tracker's owner owns.
class GaugeTracker {
 public:
  struct Entry {
    std::mutex mutex;
    std::function<double()> read;  // empty once the tracker is gone
  };
  GaugeTracker() = default;
  explicit GaugeTracker(std::shared_ptr<Entry> entry) : entry_(std::move(entry)) {}
  GaugeTracker(GaugeTracker&&) noexcept = default;
  GaugeTracker& operator=(GaugeTracker&& other) noexcept;
  GaugeTracker(const GaugeTracker&) = delete;
  GaugeTracker& operator=(const GaugeTracker&) = delete;
  ~GaugeTracker() { Release(); }

 private:
  void Release();
  std::shared_ptr<Entry> entry_;
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  // The gauge reads as its own value plus what every live tracker's function returns (several
  // session managers in one process each add their own sessions).
  [[nodiscard]] GaugeTracker Track(std::function<double()> read);
  double value() const;

 private:
  std::atomic<double> value_{0};
  mutable std::mutex tracked_mutex_;
  std::vector<std::weak_ptr<GaugeTracker::Entry>> tracked_;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  Sample Read() const;  // bucket_counts, sum and count

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1 (+Inf)
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// One metric name and its label sets.
class FamilyBase {
 public:
  static constexpr size_t kMaxChildren = 200;
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names, std::vector<double> bounds);
  virtual ~FamilyBase() = default;
  FamilySnapshot Collect() const;

 protected:
  // The child for `values` (created on first use); the fold-over child past kMaxChildren.
  // Aborts when the count of values differs from the label names': a programming error.
  void* Child(std::vector<std::string> values);
  virtual std::shared_ptr<void> MakeChild() const = 0;
  virtual void Read(const void* child, Sample& sample) const = 0;
  FamilySnapshot shape_;  // name, help, type, label names, bounds; no samples

 private:
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, std::shared_ptr<void>> children_;
};

template <typename M>
class Family : public FamilyBase {
 public:
  using FamilyBase::FamilyBase;
  M& Labels(std::vector<std::string> values) { return *static_cast<M*>(Child(std::move(values))); }
  M& Labels() { return Labels(std::vector<std::string>{}); }

 private:
  std::shared_ptr<void> MakeChild() const override;
  void Read(const void* child, Sample& sample) const override;
};

class Registry {
 public:
  // Registration aborts on an invalid or duplicate name: names are constants in the code.
  Family<Counter>& AddCounter(const std::string& name, std::string help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, std::string help,
                          std::vector<std::string> label_names = {});
  // `bounds`: ascending upper bounds; +Inf is implied.
  Family<Histogram>& AddHistogram(const std::string& name, std::string help,
                                  std::vector<std::string> label_names, std::vector<double> bounds);
  // Families produced at each scrape by `collect` (the process_* figures), after the
  // registered ones.
  void AddCollector(std::function<std::vector<FamilySnapshot>()> collect);

  // Every family, in the order registered, and what the collectors produce.
  std::vector<FamilySnapshot> Collect() const;

 private:
  void Register(std::unique_ptr<FamilyBase> family, const std::string& name);
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
  std::vector<std::string> names_;
  std::vector<std::function<std::vector<FamilySnapshot>()>> collectors_;
};

}  // namespace sandbox::metrics
