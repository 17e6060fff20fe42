#include "runtime/cgroup/background_cpu.h"

#include <sys/utsname.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace sandbox::cgroup {
namespace {

std::optional<long> ParseLong(std::string_view text) {
  long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

BackgroundCpu BackgroundCpuFor(std::string_view kernel_release) {
  // "6.1.0-56-amd64", "6.18.44-fc": major.minor, each up to the first non-digit.
  int major = 0, minor = 0;
  auto [dot, major_error] =
      std::from_chars(kernel_release.data(), kernel_release.data() + kernel_release.size(), major);
  const char* end = kernel_release.data() + kernel_release.size();
  if (major_error != std::errc() || dot == end || *dot != '.') return BackgroundCpu::kBandwidthCap;
  if (std::from_chars(dot + 1, end, minor).ec != std::errc()) return BackgroundCpu::kBandwidthCap;
  bool eevdf = major > 6 || (major == 6 && minor >= 6);
  return eevdf ? BackgroundCpu::kWeight : BackgroundCpu::kBandwidthCap;
}

BackgroundCpu HostBackgroundCpu() {
  static const BackgroundCpu mechanism = [] {
    struct utsname host {};
    if (::uname(&host) != 0) return BackgroundCpu::kBandwidthCap;
    return BackgroundCpuFor(host.release);
  }();
  return mechanism;
}

const char* BackgroundCpuName(BackgroundCpu mechanism) {
  return mechanism == BackgroundCpu::kWeight ? "weight" : "bandwidth cap";
}

long BackgroundQuotaMicros(long quota_micros, long period_micros) {
  // The kernel refuses quotas under 1 ms.
  long cap = std::max(1000L, std::lround(kBackgroundCpuShare * static_cast<double>(period_micros)));
  return quota_micros < 0 ? cap : std::min(quota_micros, cap);
}

std::optional<std::string> BackgroundCpuMax(std::string_view cpu_max) {
  while (!cpu_max.empty() && (cpu_max.back() == '\n' || cpu_max.back() == ' ')) {
    cpu_max.remove_suffix(1);
  }
  size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view quota = cpu_max.substr(0, space);
  auto period = ParseLong(cpu_max.substr(space + 1));
  if (!period || *period <= 0) return std::nullopt;
  std::optional<long> quota_micros = quota == "max" ? std::optional<long>(-1) : ParseLong(quota);
  if (!quota_micros) return std::nullopt;
  return fmt::format("{} {}", BackgroundQuotaMicros(*quota_micros, *period), *period);
}

}  // namespace sandbox::cgroup
