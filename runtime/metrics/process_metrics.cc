#include "runtime/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "runtime/base/files.h"

namespace sandbox::metrics {

namespace {

std::optional<double> ParseNumber(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> BootTime() {
  auto stat = ReadFile("/proc/stat");
  if (!stat) return std::nullopt;
  size_t at = stat->find("\nbtime ");
  if (at == std::string::npos) return std::nullopt;
  at += 7;
  size_t end = stat->find('\n', at);
  return ParseNumber(std::string_view(*stat).substr(at, end - at));
}

std::optional<double> CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the descriptor of the directory being read
}

FamilySnapshot One(std::string name, std::string help, MetricType type, double value) {
  FamilySnapshot family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  Sample sample;
  sample.value = value;
  family.samples.push_back(std::move(sample));
  return family;
}

}  // namespace

ProcessFigures ParseProcStat(std::string_view stat, double ticks_per_second, double page_bytes,
                             std::optional<double> boot_time_s) {
  ProcessFigures figures;
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return figures;
  // Fields after "pid (comm)": field 3 (state) is the first; proc(5) numbers them from 1.
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && (rest[pos] == ' ' || rest[pos] == '\n')) ++pos;
    size_t end = pos;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '\n') ++end;
    if (end > pos) fields.push_back(rest.substr(pos, end - pos));
    pos = end;
  }
  auto field = [&](size_t number) -> std::optional<double> {
    size_t index = number - 3;
    if (index >= fields.size()) return std::nullopt;
    return ParseNumber(fields[index]);
  };
  auto utime = field(14);
  auto stime = field(15);
  if (utime && stime) figures.cpu_seconds = (*utime + *stime) / ticks_per_second;
  if (auto starttime = field(22); starttime && boot_time_s) {
    figures.start_time_seconds = *boot_time_s + *starttime / ticks_per_second;
  }
  figures.virtual_bytes = field(23);
  if (auto rss = field(24)) figures.resident_bytes = *rss * page_bytes;
  return figures;
}

ProcessFigures ReadProcessFigures() {
  ProcessFigures figures;
  if (auto stat = ReadFile("/proc/self/stat")) {
    figures = ParseProcStat(*stat, static_cast<double>(::sysconf(_SC_CLK_TCK)),
                            static_cast<double>(::sysconf(_SC_PAGESIZE)), BootTime());
  }
  figures.open_fds = CountOpenFds();
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    figures.max_fds = static_cast<double>(limit.rlim_cur);
  }
  return figures;
}

std::vector<FamilySnapshot> ProcessFamilies(const ProcessFigures& figures) {
  std::vector<FamilySnapshot> families;
  auto add = [&](const std::optional<double>& value, const char* name, const char* help,
                 MetricType type) {
    if (value) families.push_back(One(name, help, type, *value));
  };
  add(figures.cpu_seconds, "process_cpu_seconds_total",
      "Total user and system CPU time spent in seconds.", MetricType::kCounter);
  add(figures.open_fds, "process_open_fds", "Number of open file descriptors.", MetricType::kGauge);
  add(figures.max_fds, "process_max_fds", "Maximum number of open file descriptors.",
      MetricType::kGauge);
  add(figures.virtual_bytes, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
      MetricType::kGauge);
  add(figures.resident_bytes, "process_resident_memory_bytes", "Resident memory size in bytes.",
      MetricType::kGauge);
  add(figures.start_time_seconds, "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds.", MetricType::kGauge);
  return families;
}

std::vector<FamilySnapshot> CollectProcessMetrics() {
  return ProcessFamilies(ReadProcessFigures());
}

}  // namespace sandbox::metrics
