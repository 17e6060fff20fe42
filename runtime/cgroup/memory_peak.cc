#include "runtime/cgroup/memory_peak.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <memory>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox {

namespace {

std::optional<uint64_t> ParseCount(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<MemoryPeakReader> StartMemoryPeakWindow(const std::string& memory_group, bool v2,
                                               uint64_t* peak_before) {
  if (memory_group.empty()) return Fail(ErrorCode::kNotFound, "no memory cgroup");
  if (!v2) {
    std::string path = memory_group + "/memory.max_usage_in_bytes";
    if (peak_before != nullptr) {
      auto text = ReadFile(path);
      *peak_before = text ? ParseCount(*text).value_or(0) : 0;
    }
    SBX_TRY(WriteFile(path, "0"));
    return MemoryPeakReader([path]() -> std::optional<uint64_t> {
      auto text = ReadFile(path);
      return text ? ParseCount(*text) : std::nullopt;
    });
  }
  std::string path = memory_group + "/memory.peak";
  auto fd = std::make_shared<Fd>(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!*fd) return FailSys("open", path);
  // Before Linux 6.12 memory.peak is read-only: the write fails (EACCES/EINVAL), and there is
  // no per-call peak to be had.
  if (::write(fd->get(), "reset\n", 6) != 6) return FailSys("write", path);
  return MemoryPeakReader([fd]() -> std::optional<uint64_t> {
    char buffer[32];
    ssize_t n = ::pread(fd->get(), buffer, sizeof buffer - 1, 0);
    if (n <= 0) return std::nullopt;
    return ParseCount(std::string_view(buffer, static_cast<size_t>(n)));
  });
}

}  // namespace sandbox
