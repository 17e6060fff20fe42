#include "runtime/metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace sandbox::metrics {

namespace {

bool NameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

// Registration errors are programming errors (names are constants): stop at once, loudly.
[[noreturn]] void Misuse(const std::string& what) {
  std::fprintf(stderr, "metrics registry: %s\n", what.c_str());
  std::abort();
}

}  // namespace

bool ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, true)) return false;
  }
  return true;
}

bool ValidLabelName(std::string_view name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, false)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------- Counter

void Counter::Inc(double amount) {
  if (!(amount >= 0)) return;  // negative or NaN
  value_.fetch_add(amount, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------- Gauge

GaugeTracker& GaugeTracker::operator=(GaugeTracker&& other) noexcept {
  if (this != &other) {
    Release();
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void GaugeTracker::Release() {
  if (!entry_) return;
  std::lock_guard<std::mutex> lock(entry_->mutex);  // waits for a scrape reading it now
  entry_->read = nullptr;
  entry_.reset();
}

GaugeTracker Gauge::Track(std::function<double()> read) {
  auto entry = std::make_shared<GaugeTracker::Entry>();
  entry->read = std::move(read);
  std::lock_guard<std::mutex> lock(tracked_mutex_);
  // Forget the trackers that are gone, so a process that makes many never grows the list.
  std::erase_if(tracked_, [](const auto& weak) { return weak.expired(); });
  tracked_.push_back(entry);
  return GaugeTracker(std::move(entry));
}

double Gauge::value() const {
  double total = value_.load(std::memory_order_relaxed);
  std::vector<std::shared_ptr<GaugeTracker::Entry>> live;
  {
    std::lock_guard<std::mutex> lock(tracked_mutex_);
    for (const auto& weak : tracked_) {
      if (auto entry = weak.lock()) live.push_back(std::move(entry));
    }
  }
  // Read without the list's lock: a function may take its owner's locks, and its owner may
  // be in Track or ~GaugeTracker meanwhile.
  for (const auto& entry : live) {
    std::lock_guard<std::mutex> lock(entry->mutex);
    if (entry->read) total += entry->read();
  }
  return total;
}

// ---------------------------------------------------------------------------- Histogram

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bucket whose upper bound holds the value (le: less than or equal).
  size_t bucket = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                      bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Sample Histogram::Read() const {
  Sample sample;
  sample.bucket_counts.reserve(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    sample.bucket_counts.push_back(buckets_[i].load(std::memory_order_relaxed));
    total += sample.bucket_counts.back();
  }
  sample.sum = sum_.load(std::memory_order_relaxed);
  // The buckets are read one by one while observations go on: the count is their total, so a
  // scrape is never inconsistent with itself (+Inf bucket == _count).
  sample.count = total;
  return sample;
}

// ---------------------------------------------------------------------------- Family

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names, std::vector<double> bounds) {
  shape_.name = std::move(name);
  shape_.help = std::move(help);
  shape_.type = type;
  shape_.label_names = std::move(label_names);
  shape_.bounds = std::move(bounds);
}

void* FamilyBase::Child(std::vector<std::string> values) {
  if (values.size() != shape_.label_names.size()) {
    Misuse(shape_.name + ": wrong number of label values");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = children_.find(values);
  if (it != children_.end()) return it->second.get();
  if (children_.size() >= kMaxChildren) {
    std::fill(values.begin(), values.end(), "other");
    it = children_.find(values);
    if (it != children_.end()) return it->second.get();
  }
  auto child = MakeChild();
  void* raw = child.get();
  children_.emplace(std::move(values), std::move(child));
  return raw;
}

FamilySnapshot FamilyBase::Collect() const {
  FamilySnapshot snapshot = shape_;
  std::vector<std::pair<std::vector<std::string>, std::shared_ptr<void>>> children;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    children.assign(children_.begin(), children_.end());
  }
  snapshot.samples.reserve(children.size());
  for (auto& [values, child] : children) {
    Sample sample;
    Read(child.get(), sample);
    sample.label_values = values;
    snapshot.samples.push_back(std::move(sample));
  }
  return snapshot;
}

template <>
std::shared_ptr<void> Family<Counter>::MakeChild() const {
  return std::make_shared<Counter>();
}
template <>
void Family<Counter>::Read(const void* child, Sample& sample) const {
  sample.value = static_cast<const Counter*>(child)->value();
}
template <>
std::shared_ptr<void> Family<Gauge>::MakeChild() const {
  return std::make_shared<Gauge>();
}
template <>
void Family<Gauge>::Read(const void* child, Sample& sample) const {
  sample.value = static_cast<const Gauge*>(child)->value();
}
template <>
std::shared_ptr<void> Family<Histogram>::MakeChild() const {
  return std::make_shared<Histogram>(shape_.bounds);
}
template <>
void Family<Histogram>::Read(const void* child, Sample& sample) const {
  sample = static_cast<const Histogram*>(child)->Read();
}

// ---------------------------------------------------------------------------- Registry

void Registry::Register(std::unique_ptr<FamilyBase> family, const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    Misuse(name + ": registered twice");
  }
  names_.push_back(name);
  families_.push_back(std::move(family));
}

namespace {
void CheckNames(const std::string& name, const std::vector<std::string>& label_names) {
  if (!ValidMetricName(name)) Misuse("invalid metric name " + name);
  for (const auto& label : label_names) {
    if (!ValidLabelName(label) || label == "le") Misuse(name + ": invalid label name " + label);
  }
}
}  // namespace

Family<Counter>& Registry::AddCounter(const std::string& name, std::string help,
                                      std::vector<std::string> label_names) {
  CheckNames(name, label_names);
  auto family = std::make_unique<Family<Counter>>(name, std::move(help), MetricType::kCounter,
                                                  std::move(label_names), std::vector<double>{});
  auto& ref = *family;
  Register(std::move(family), name);
  return ref;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, std::string help,
                                  std::vector<std::string> label_names) {
  CheckNames(name, label_names);
  auto family = std::make_unique<Family<Gauge>>(name, std::move(help), MetricType::kGauge,
                                                std::move(label_names), std::vector<double>{});
  auto& ref = *family;
  Register(std::move(family), name);
  return ref;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, std::string help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> bounds) {
  CheckNames(name, label_names);
  if (!std::is_sorted(bounds.begin(), bounds.end()) ||
      std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end() ||
      std::any_of(bounds.begin(), bounds.end(), [](double b) { return !std::isfinite(b); })) {
    Misuse(name + ": histogram bounds must be finite and strictly ascending");
  }
  auto family = std::make_unique<Family<Histogram>>(name, std::move(help), MetricType::kHistogram,
                                                    std::move(label_names), std::move(bounds));
  auto& ref = *family;
  Register(std::move(family), name);
  return ref;
}

void Registry::AddCollector(std::function<std::vector<FamilySnapshot>()> collect) {
  std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collect));
}

std::vector<FamilySnapshot> Registry::Collect() const {
  std::vector<const FamilyBase*> families;
  std::vector<std::function<std::vector<FamilySnapshot>()>> collectors;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& family : families_) families.push_back(family.get());
    collectors = collectors_;
  }
  std::vector<FamilySnapshot> snapshots;
  snapshots.reserve(families.size());
  for (const auto* family : families) snapshots.push_back(family->Collect());
  for (const auto& collect : collectors) {
    for (auto& snapshot : collect()) snapshots.push_back(std::move(snapshot));
  }
  return snapshots;
}

}  // namespace sandbox::metrics
