#include "runtime/cgroup/cgroup_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::cgroup {
namespace {

std::vector<std::string_view> SplitOn(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string UnescapeMountField(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      std::string_view oct = field.substr(i + 1, 3);
      if (oct.size() == 3 &&
          std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (std::string_view line : SplitOn(mountinfo, '\n')) {
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> head = SplitOn(line.substr(0, dash), ' ');
    std::vector<std::string_view> tail = SplitOn(line.substr(dash + 3), ' ');
    if (head.size() < 5 || tail.size() < 3) continue;
    CgroupMount mount;
    if (tail[0] == "cgroup2") {
      mount.v2 = true;
    } else if (tail[0] != "cgroup") {
      continue;
    }
    mount.root = UnescapeMountField(head[3]);
    mount.mount_point = UnescapeMountField(head[4]);
    if (!mount.v2) {
      // Super options: "rw,memory" or "rw,cpu,cpuacct" or "rw,xattr,name=systemd".
      for (std::string_view option : SplitOn(tail[2], ',')) {
        if (option == "rw" || option == "ro" || option.find('=') != std::string_view::npos ||
            option == "xattr" || option == "noprefix" || option == "clone_children" ||
            option == "cpuset_v2_mode" || option == "favordynmods") {
          continue;
        }
        mount.controllers.emplace_back(option);
      }
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

Result<std::vector<CgroupMount>> ReadCgroupMounts() {
  SBX_ASSIGN_OR_RETURN(std::string text, ReadFile("/proc/self/mountinfo"));
  return ParseCgroupMounts(text);
}

std::vector<ProcCgroupEntry> ParseProcCgroup(std::string_view text) {
  std::vector<ProcCgroupEntry> entries;
  for (std::string_view line : SplitOn(text, '\n')) {
    if (line.empty()) continue;
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    ProcCgroupEntry entry;
    entry.hierarchy = ParseControlNumber<int>(line.substr(0, first)).value_or(-1);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    if (!controllers.empty()) {
      for (std::string_view c : SplitOn(controllers, ',')) entry.controllers.emplace_back(c);
    }
    entry.path = std::string(line.substr(second + 1));
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<std::vector<ProcCgroupEntry>> ReadProcCgroup(pid_t pid) {
  std::string path = pid == 0 ? "/proc/self/cgroup" : fmt::format("/proc/{}/cgroup", pid);
  SBX_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseProcCgroup(text);
}

std::optional<std::string> V2PathOf(const std::vector<ProcCgroupEntry>& entries) {
  for (const auto& entry : entries) {
    if (entry.hierarchy == 0 && entry.controllers.empty()) return entry.path;
  }
  return std::nullopt;
}

Result<std::string> ReadControl(const std::string& path) {
  SBX_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return std::string(TrimRight(text));
}

Status WriteControl(const std::string& path, std::string_view value) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return FailSys("open", path);
  // One write per value: cgroupfs parses each write(2) on its own.
  ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return FailSys(fmt::format("write '{}' to", value), path);
  if (static_cast<size_t>(n) != value.size()) {
    return Fail(ErrorCode::kInternal, "short write of '{}' to {}", value, path);
  }
  return {};
}

Result<uint64_t> ReadUint(const std::string& path) {
  SBX_ASSIGN_OR_RETURN(std::string text, ReadControl(path));
  if (text == "max") return UINT64_MAX;
  auto value = ParseControlNumber<uint64_t>(text);
  if (!value) return Fail(ErrorCode::kInternal, "{}: not a number: '{}'", path, text);
  return *value;
}

std::optional<uint64_t> FindKeyedValue(std::string_view text, std::string_view key) {
  for (std::string_view line : SplitOn(text, '\n')) {
    size_t space = line.find(' ');
    if (space == std::string_view::npos || line.substr(0, space) != key) continue;
    return ParseControlNumber<uint64_t>(TrimRight(line.substr(space + 1)));
  }
  return std::nullopt;
}

Result<std::vector<pid_t>> ReadPids(const std::string& procs_file) {
  auto text = ReadFile(procs_file);
  if (!text) {
    if (text.error().sys_errno == ENOENT || text.error().sys_errno == ENODEV) {
      return std::vector<pid_t>{};
    }
    return Fail(std::move(text.error()));
  }
  std::vector<pid_t> pids;
  for (std::string_view line : SplitOn(*text, '\n')) {
    if (line.empty()) continue;
    if (auto pid = ParseControlNumber<pid_t>(line)) pids.push_back(*pid);
  }
  return pids;
}

// The wait between two looks at a group whose tasks were just killed: they are gone in well
// under a millisecond, and every millisecond waited here is wall time of a one-shot run's
// teardown, so the first looks come soon, then every 2 ms.
namespace {
std::chrono::microseconds NextPoll(std::chrono::microseconds last) {
  return std::min(last * 2, std::chrono::microseconds(2000));
}
}  // namespace

Result<int> KillListedUntilEmpty(const std::string& procs_file, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int kills = 0;
  std::chrono::microseconds poll(100);
  for (;;) {
    SBX_ASSIGN_OR_RETURN(std::vector<pid_t> pids, ReadPids(procs_file));
    if (pids.empty()) return kills;
    for (pid_t pid : pids) {
      // ESRCH: it exited between the read and the kill, which is what we want.
      if (::kill(pid, SIGKILL) == 0) ++kills;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(ErrorCode::kInternal, "{} still lists {} process(es) after SIGKILL (first: {})",
                  procs_file, pids.size(), pids.front());
    }
    std::this_thread::sleep_for(poll);
    poll = NextPoll(poll);
  }
}

Status RemoveCgroupDir(const std::string& dir, std::chrono::milliseconds timeout) {
  for (const std::string& child : ListChildGroups(dir)) {
    SBX_TRY(RemoveCgroupDir(dir + "/" + child, timeout));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::microseconds poll(100);
  for (;;) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
    int err = errno;
    // EBUSY: tasks are still exiting (or a child group appeared); anything else is final.
    if (err != EBUSY || std::chrono::steady_clock::now() > deadline) {
      return FailSys("rmdir", dir, err);
    }
    std::this_thread::sleep_for(poll);
    poll = NextPoll(poll);
  }
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> ListChildGroups(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (struct dirent* entry = ::readdir(d)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (entry->d_type == DT_DIR) names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> GroupNameFor(const std::string& session_id) {
  bool safe = !session_id.empty() && session_id.size() <= layout::kMaxSessionIdLength &&
              session_id.front() != '.' &&
              std::all_of(session_id.begin(), session_id.end(), [](char c) {
                return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
              });
  if (!safe) {
    return Fail(ErrorCode::kInvalidSessionId, "'{}' cannot name a cgroup", session_id);
  }
  if (session_id.rfind(layout::kSessionIdPrefix, 0) == 0) return session_id;
  return layout::kSessionIdPrefix + session_id;
}

std::pair<int, int> KernelVersion() {
  struct utsname uts {};
  if (::uname(&uts) != 0) return {0, 0};
  int major = 0;
  int minor = 0;
  std::string_view release = uts.release;
  auto parts = SplitOn(release, '.');
  if (parts.size() >= 2) {
    major = ParseControlNumber<int>(parts[0]).value_or(0);
    std::string_view minor_text = parts[1];
    size_t digits = 0;
    while (digits < minor_text.size() && minor_text[digits] >= '0' && minor_text[digits] <= '9') {
      ++digits;
    }
    minor = ParseControlNumber<int>(minor_text.substr(0, digits)).value_or(0);
  }
  return {major, minor};
}

}  // namespace sandbox::cgroup
