// Small helpers over cgroupfs and /proc shared by the v1 and v2 appliers: reading and writing
// control files, parsing /proc/self/mountinfo and /proc/self/cgroup, listing and killing the
// processes of a group, and removing a group once it has drained. Runs in the server process.
#pragma once

#include <sys/types.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::cgroup {

// One cgroup filesystem mount from /proc/self/mountinfo.
struct CgroupMount {
  std::string mount_point;               // "/sys/fs/cgroup/memory"
  std::string root;                      // the mount's root inside the hierarchy (usually "/")
  bool v2 = false;                       // fstype cgroup2
  std::vector<std::string> controllers;  // v1 only: from the super options ("memory", "cpu", ...)
};

// Parses mountinfo text (see proc(5)); lines that are not cgroup mounts are skipped.
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);
Result<std::vector<CgroupMount>> ReadCgroupMounts();

// One line of /proc/<pid>/cgroup: "hierarchy-id:controller-list:path".
struct ProcCgroupEntry {
  int hierarchy = 0;
  std::vector<std::string> controllers;  // empty for the v2 line ("0::/path")
  std::string path;
};
std::vector<ProcCgroupEntry> ParseProcCgroup(std::string_view text);
Result<std::vector<ProcCgroupEntry>> ReadProcCgroup(pid_t pid = 0);  // 0: self

// The v2 path ("0::" line) of a process, or nullopt when it has none.
std::optional<std::string> V2PathOf(const std::vector<ProcCgroupEntry>& entries);

// The contents of a control file with trailing whitespace removed.
Result<std::string> ReadControl(const std::string& path);
// The number a control file's text holds (cpu.cfs_quota_us's "-1", memory.peak's bytes), a
// trailing newline or spaces left out; nullopt when the text is anything but that one number.
template <typename Number>
std::optional<Number> ParseControlNumber(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  Number value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}
// Writes one value to a control file in a single write(2); the kernel's errno is kept (EBUSY,
// EINVAL, EOPNOTSUPP say different things for cgroup files).
Status WriteControl(const std::string& path, std::string_view value);
Result<uint64_t> ReadUint(const std::string& path);
// "key value" lines (memory.events, cpu.stat, memory.oom_control): the value for `key`.
std::optional<uint64_t> FindKeyedValue(std::string_view text, std::string_view key);

// The pids listed in a cgroup.procs (or tasks) file; a vanished group gives an empty list.
Result<std::vector<pid_t>> ReadPids(const std::string& procs_file);

// SIGKILLs every pid listed in `procs_file` until the list stays empty or `timeout` passes.
// Returns the number of kill(2) calls made. Used where cgroup.kill is unavailable.
Result<int> KillListedUntilEmpty(const std::string& procs_file, std::chrono::milliseconds timeout);

// How long both hierarchies wait for a group's tasks to be killed and its directory removed.
inline constexpr std::chrono::milliseconds kDrainTimeout{2000};

// rmdir(2) of a cgroup directory and, depth first, of any child groups in it, retrying while
// the kernel still reports EBUSY (exiting tasks drain asynchronously). ENOENT is success.
Status RemoveCgroupDir(const std::string& dir, std::chrono::milliseconds timeout);

bool PathExists(const std::string& path);
// Names of the sub-directories of `dir` (the child groups); empty when `dir` is missing.
std::vector<std::string> ListChildGroups(const std::string& dir);

// "sess_<id>" (or the id itself when it already starts with "sess_"), after checking that the
// id is a safe single path component.
Result<std::string> GroupNameFor(const std::string& session_id);

// Kernel release as (major, minor), e.g. {6, 1}; {0, 0} when uname fails.
std::pair<int, int> KernelVersion();

}  // namespace sandbox::cgroup
