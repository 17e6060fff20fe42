#include "runtime/cgroup/memory_peak.h"

#include <fcntl.h>
#include <unistd.h>

#include <string_view>

#include "runtime/base/after_reply.h"
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

Result<std::shared_ptr<MemoryPeakFile>> OpenMemoryPeakFile(const std::string& memory_group,
                                                           bool v2) {
  if (memory_group.empty()) return Fail(ErrorCode::kNotFound, "no memory cgroup");
  std::string path = memory_group + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes");
  // Before Linux 6.12 memory.peak has no write handler: the open for writing fails (EACCES).
  Fd file(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!file) return FailSys("open", path);
  return std::make_shared<MemoryPeakFile>(std::move(file), v2);
}

bool MemoryPeakFile::Reset(std::optional<uint64_t> mark) {
  if (!v2_ && mark) {
    uint64_t kept = peak_before_resets_.load();
    while (*mark > kept && !peak_before_resets_.compare_exchange_weak(kept, *mark)) {
    }
  }
  std::string_view reset = v2_ ? "reset\n" : "0";
  ++resets_;
  return ::pwrite(file_.get(), reset.data(), reset.size(), 0) == static_cast<ssize_t>(reset.size());
}

Result<MemoryPeakReader> MemoryPeakFile::StartWindow() {
  if (!file_) return Fail(ErrorCode::kNotFound, "no memory peak file");
  uint64_t window = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    window = ++windows_;
    std::optional<uint64_t> mark = ReadCount(file_);
    bool unmoved = reset_at_ && mark && *mark == *reset_at_;
    reset_at_.reset();
    if (!unmoved && !Reset(mark)) {
      return FailSys("write", v2_ ? "memory.peak" : "memory.max_usage_in_bytes");
    }
  }
  return MemoryPeakReader([self = shared_from_this(), window]() -> std::optional<uint64_t> {
    std::optional<uint64_t> peak = ReadCount(self->file_);
    AfterReply::Defer([self, window] { self->ResetForNextWindow(window); });
    return peak;
  });
}

void MemoryPeakFile::ResetForNextWindow(uint64_t window) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (window != windows_) return;  // the next call started first and reset the mark itself
  // The mark before the reset (v1 keeps it as the session's) and just after it (what the next
  // call compares with).
  if (Reset(ReadCount(file_))) reset_at_ = ReadCount(file_);
}

}  // namespace sandbox
