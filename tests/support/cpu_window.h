#pragma once
// CPU seconds two sandboxes (or groups) used over a window: the CPU-priority tests compare them
// to judge the weights the kernel gives each.

#include <chrono>
#include <thread>
#include <utility>

namespace sandbox::testing {

// CPU seconds each of `a` and `b` used over `window`. `a` and `b` are anything with
// `Usage().cpu_seconds` (a Sandbox, a SandboxCgroup).
template <typename Measured>
std::pair<double, double> CpuOver(Measured& a, Measured& b, std::chrono::milliseconds window) {
  double a0 = a.Usage().cpu_seconds;
  double b0 = b.Usage().cpu_seconds;
  std::this_thread::sleep_for(window);
  return {a.Usage().cpu_seconds - a0, b.Usage().cpu_seconds - b0};
}

// CpuOver, taken again (up to five windows) while the two together ran less than `enough`: on a
// loaded host the CPU they share is shared with more than these two (a CI run's other tests, its
// background builds), and a window in which neither ran says nothing about their weights. The
// checks on the weights stay as they are; only a starved window is not judged.
template <typename Measured>
std::pair<double, double> CpuOverEnough(Measured& a, Measured& b, std::chrono::milliseconds window,
                                        double enough) {
  std::pair<double, double> used;
  for (int i = 0; i < 5; ++i) {
    used = CpuOver(a, b, window);
    if (used.first + used.second >= enough) break;
  }
  return used;
}

}  // namespace sandbox::testing
