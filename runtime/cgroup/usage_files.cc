#include "runtime/cgroup/usage_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <string_view>

#include "runtime/cgroup/cgroup_fs.h"

namespace sandbox {

namespace {

Fd OpenForReading(const std::string& group, const char* name) {
  if (group.empty()) return Fd();
  return Fd(::open((group + "/" + name).c_str(), O_RDONLY | O_CLOEXEC));
}

// The file's text from its start into `buffer` (cpu.stat, the longest, is ~250 bytes).
std::optional<std::string_view> ReadAll(const Fd& file, char (&buffer)[1024]) {
  if (!file) return std::nullopt;
  ssize_t n = ::pread(file.get(), buffer, sizeof buffer, 0);
  if (n <= 0) return std::nullopt;
  return std::string_view(buffer, static_cast<size_t>(n));
}

std::optional<uint64_t> ParseUint(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

CgroupUsageFiles CgroupUsageFiles::Open(bool v2, const std::string& memory_group,
                                        const std::string& cpu_group) {
  CgroupUsageFiles files;
  files.v2_ = v2;
  files.memory_group_ = memory_group;
  files.cpu_ = OpenForReading(cpu_group, v2 ? "cpu.stat" : "cpuacct.usage");
  files.oom_ = OpenForReading(memory_group, v2 ? "memory.events" : "memory.oom_control");
  if (auto peak = OpenMemoryPeakFile(memory_group, v2)) files.peak_ = std::move(*peak);
  return files;
}

double CgroupUsageFiles::CpuSeconds() const {
  char buffer[1024];
  auto text = ReadAll(cpu_, buffer);
  if (!text) return 0;
  if (v2_)
    return static_cast<double>(cgroup::FindKeyedValue(*text, "usage_usec").value_or(0)) / 1e6;
  return static_cast<double>(ParseUint(*text).value_or(0)) / 1e9;
}

uint64_t CgroupUsageFiles::OomKills() const {
  char buffer[1024];
  auto text = ReadAll(oom_, buffer);
  if (!text) return 0;
  if (auto kills = cgroup::FindKeyedValue(*text, "oom_kill")) return *kills;
  if (v2_) return 0;
  // Before Linux 4.13: only how often the limit was hit (the plan says so).
  return cgroup::ReadUint(memory_group_ + "/memory.failcnt").value_or(0);
}

Result<MemoryPeakReader> CgroupUsageFiles::StartMemoryPeakWindow() const {
  if (!peak_) return Fail(ErrorCode::kNotFound, "no memory peak file");
  return peak_->StartWindow();
}

uint64_t CgroupUsageFiles::PeakBeforeResets() const {
  return peak_ ? peak_->peak_before_resets() : 0;
}

int CgroupUsageFiles::open_files() const {
  return (cpu_ ? 1 : 0) + (oom_ ? 1 : 0) + (peak_ ? 1 : 0);
}

void CgroupUsageFiles::Close() {
  cpu_.Reset();
  oom_.Reset();
  peak_.reset();
}

}  // namespace sandbox
