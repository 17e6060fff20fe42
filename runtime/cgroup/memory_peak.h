// The memory peak of one call, from the session's memory cgroup: the high-water mark reset when
// the call starts and read when it ends. Where the kernel allows it:
//   cgroup v1: writing 0 to memory.max_usage_in_bytes resets the group's mark to its current
//     usage (Documentation/admin-guide/cgroup-v1/memory.rst, 5.4), for every reader;
//   cgroup v2: writing to memory.peak resets it for reads through that same descriptor only
//     (Linux >= 6.12, Documentation/admin-guide/cgroup-v2.rst), so the descriptor is kept.
// Elsewhere (v2 before 6.12) opening the file for the reset fails, and the caller reports the
// session's peak instead. The file is opened once per session (usage_files.h).
//
// When a window is read (the call's end), the reset for the next call is left until the call's
// reply is sent (runtime/base/after_reply.h), and the mark is read once more just after it. The
// next call then reads the mark before its run and resets it only when it moved since: a
// process of the session charged more memory in between. Most calls thus make one read before
// their run (not a read and a write) and one after it, and the reset, a write, happens while the
// session waits for its next call. What a call reports stays the peak of its own run, except
// when memory the session held at the previous call's end was freed while it was idle without
// the mark moving (a background process exiting, reclaim): then it is at least what the session
// held then (docs/metrics.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

// What reads the peak since the window started; nullopt when it cannot be read any more.
using MemoryPeakReader = std::function<std::optional<uint64_t>()>;

// A session's peak file and what the windows over it need to know between calls. Shared with
// the readers and the deferred resets, so it outlives the group object that opened it.
class MemoryPeakFile : public std::enable_shared_from_this<MemoryPeakFile> {
 public:
  MemoryPeakFile(Fd file, bool v2) : file_(std::move(file)), v2_(v2) {}

  // Starts a call's window: reads the mark and resets it unless it stands where the last
  // window's deferred reset left it. Fails when the reset fails.
  Result<MemoryPeakReader> StartWindow();

  // v1: the largest mark seen just before a reset. A v1 reset is seen by every reader, so the
  // session's own peak is the largest of this and what the file says now.
  uint64_t peak_before_resets() const { return peak_before_resets_.load(); }
  // How many resets were written (for tests: a skipped reset leaves no trace in a plain file).
  uint64_t resets() const { return resets_.load(); }

 private:
  // After a window's reply: the reset for the next window, unless another window started since.
  void ResetForNextWindow(uint64_t window);
  // Resets the mark (under mutex_), keeping a v1 mark in peak_before_resets_ first.
  bool Reset(std::optional<uint64_t> mark);

  Fd file_;
  bool v2_;
  std::atomic<uint64_t> peak_before_resets_{0};
  std::atomic<uint64_t> resets_{0};
  std::mutex mutex_;
  uint64_t windows_ = 0;              // windows started
  std::optional<uint64_t> reset_at_;  // the mark just after the last deferred reset, if unused
};

// The peak file of `memory_group` (the session's group in the memory hierarchy on v1, its one
// group on v2), open for reading and resetting.
Result<std::shared_ptr<MemoryPeakFile>> OpenMemoryPeakFile(const std::string& memory_group,
                                                           bool v2);

}  // namespace sandbox
