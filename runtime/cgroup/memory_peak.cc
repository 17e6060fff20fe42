#include "runtime/cgroup/memory_peak.h"

#include <fcntl.h>
#include <unistd.h>

#include <string_view>

#include "runtime/cgroup/cgroup_fs.h"

namespace sandbox {

namespace {

// The number in the file, read from its start (a cgroup file regenerates its text at offset 0).
std::optional<uint64_t> ReadCount(const Fd& file) {
  char buffer[32];
  ssize_t n = ::pread(file.get(), buffer, sizeof buffer - 1, 0);
  if (n <= 0) return std::nullopt;
  return cgroup::ParseControlNumber<uint64_t>(std::string_view(buffer, static_cast<size_t>(n)));
}

}  // namespace

Result<std::shared_ptr<const Fd>> OpenMemoryPeakFile(const std::string& memory_group, bool v2) {
  if (memory_group.empty()) return Fail(ErrorCode::kNotFound, "no memory cgroup");
  std::string path = memory_group + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes");
  // Before Linux 6.12 memory.peak has no write handler: the open for writing fails (EACCES).
  auto file = std::make_shared<const Fd>(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!*file) return FailSys("open", path);
  return file;
}

Result<MemoryPeakReader> StartMemoryPeakWindow(std::shared_ptr<const Fd> peak_file, bool v2,
                                               uint64_t* peak_before) {
  if (!peak_file || !*peak_file) return Fail(ErrorCode::kNotFound, "no memory peak file");
  if (!v2 && peak_before != nullptr) *peak_before = ReadCount(*peak_file).value_or(0);
  std::string_view reset = v2 ? "reset\n" : "0";
  if (::pwrite(peak_file->get(), reset.data(), reset.size(), 0) !=
      static_cast<ssize_t>(reset.size())) {
    return FailSys("write", v2 ? "memory.peak" : "memory.max_usage_in_bytes");
  }
  return MemoryPeakReader(
      [file = std::move(peak_file)]() -> std::optional<uint64_t> { return ReadCount(*file); });
}

}  // namespace sandbox
