// Naming a host process across server restarts without a pidfd: pid + start time (field 22 of
// /proc/<pid>/stat, clock ticks since boot). A pid alone may have been reused; the pair may not.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::ns {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_time = 0;

  std::string ToString() const;  // "pid starttime"
  // Parses the leading "pid starttime" of `text`.
  static std::optional<ProcessIdentity> Parse(std::string_view text);
  // The process still exists and is the same one.
  bool IsAlive() const;
  bool operator==(const ProcessIdentity&) const = default;
};

// Reads the identity of a live process. kNotFound when it does not exist.
Result<ProcessIdentity> IdentifyProcess(pid_t pid);

// The start time in a /proc/<pid>/stat line (the comm field may hold spaces and parens).
std::optional<uint64_t> ParseStatStartTime(std::string_view stat_line);

// A pidfd for `who` if it is still that process (checked after pidfd_open, so the pidfd cannot
// name a reused pid). An invalid Fd when it is gone.
Result<Fd> OpenPidfdIfSame(const ProcessIdentity& who);

}  // namespace sandbox::ns
