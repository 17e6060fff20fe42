#include "runtime/ns/process_identity.h"

#include <charconv>

#include "runtime/base/files.h"
#include "runtime/ns/pidfd.h"

namespace sandbox::ns {

std::string ProcessIdentity::ToString() const {
  return std::to_string(pid) + " " + std::to_string(start_time);
}

std::optional<ProcessIdentity> ProcessIdentity::Parse(std::string_view text) {
  ProcessIdentity id;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto r1 = std::from_chars(p, end, id.pid);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != ' ') return std::nullopt;
  auto r2 = std::from_chars(r1.ptr + 1, end, id.start_time);
  if (r2.ec != std::errc() || id.pid <= 0) return std::nullopt;
  return id;
}

bool ProcessIdentity::IsAlive() const {
  Result<ProcessIdentity> now = IdentifyProcess(pid);
  return now && *now == *this;
}

std::optional<uint64_t> ParseStatStartTime(std::string_view line) {
  size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  // Fields after the comm start with field 3 (state); starttime is field 22.
  int field = 2;
  size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    size_t start = pos;
    while (pos < rest.size() && rest[pos] != ' ') ++pos;
    if (start == pos) break;
    if (++field == 22) {
      uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(rest.data() + start, rest.data() + pos, value);
      if (ec != std::errc() || ptr != rest.data() + pos) return std::nullopt;
      return value;
    }
  }
  return std::nullopt;
}

Result<ProcessIdentity> IdentifyProcess(pid_t pid) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) {
    if (stat.error().sys_errno == ENOENT || stat.error().sys_errno == ESRCH) {
      return Fail(ErrorCode::kNotFound, "process {} does not exist", pid);
    }
    return Fail(std::move(stat.error()));
  }
  std::optional<uint64_t> start = ParseStatStartTime(*stat);
  if (!start) return Fail(ErrorCode::kInternal, "/proc/{}/stat: cannot parse", pid);
  return ProcessIdentity{pid, *start};
}

Result<Fd> OpenPidfdIfSame(const ProcessIdentity& who) {
  Fd pidfd(PidfdOpen(who.pid));
  if (!pidfd) {
    if (errno == ESRCH) return Fd();
    return FailSys("pidfd_open", std::to_string(who.pid));
  }
  if (!who.IsAlive()) return Fd();
  return pidfd;
}

}  // namespace sandbox::ns
