// Figures the benchmarks (tests/runtime/*/*_bench.cc) print: durations in milliseconds and
// nearest-rank percentiles of a series of samples.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace sandbox::testing {

using BenchClock = std::chrono::steady_clock;

inline double Ms(BenchClock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// The sample at rank p (0..1) of the sorted values, rounded to the nearest rank; 0 when empty.
inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

}  // namespace sandbox::testing
