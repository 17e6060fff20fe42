// The memory peak of one call, from the session's memory cgroup: the high-water mark reset when
// the call starts and read when it ends. Where the kernel allows it:
//   cgroup v1: writing 0 to memory.max_usage_in_bytes resets the group's mark to its current
//     usage (Documentation/admin-guide/cgroup-v1/memory.rst, 5.4), for every reader;
//   cgroup v2: writing to memory.peak resets it for reads through that same descriptor only
//     (Linux >= 6.12, Documentation/admin-guide/cgroup-v2.rst), so the descriptor is kept.
// Elsewhere (v2 before 6.12) opening the file for the reset fails, and the caller reports the
// session's peak instead. The file is opened once per session (usage_files.h) and each window is
// a write and a read on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

// What reads the peak since the window started; nullopt when it cannot be read any more.
using MemoryPeakReader = std::function<std::optional<uint64_t>()>;

// The peak file of `memory_group` (the session's group in the memory hierarchy on v1, its one
// group on v2), open for reading and resetting.
Result<std::shared_ptr<const Fd>> OpenMemoryPeakFile(const std::string& memory_group, bool v2);

// Resets the mark through `peak_file`. On v1 the reset is seen by every reader, so the session's
// own peak would be lost: the mark just before the reset goes to `*peak_before` (when given),
// for the caller to keep the session's peak as the largest of those and what the file says.
// The reader keeps the descriptor alive for as long as it lives.
Result<MemoryPeakReader> StartMemoryPeakWindow(std::shared_ptr<const Fd> peak_file, bool v2,
                                               uint64_t* peak_before = nullptr);

}  // namespace sandbox
