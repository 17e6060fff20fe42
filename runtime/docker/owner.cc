#include "runtime/docker/owner.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/files.h"

namespace sandbox::docker {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string FirstReadable(std::initializer_list<const char*> paths, const char* fallback) {
  for (const char* path : paths) {
    if (auto text = ReadFile(path)) {
      std::string value = Trimmed(std::move(*text));
      if (!value.empty()) return value;
    }
  }
  return fallback;
}

std::string StartTimeOf(long pid) {
  auto stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  return stat ? StartTimeFromStat(*stat) : std::string();
}

// "a/b/c/d" -> its four parts, or an empty vector when it has another shape.
std::vector<std::string_view> FourParts(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (parts.size() < 4) {
    size_t slash = text.find('/', start);
    if (slash == std::string_view::npos) {
      parts.push_back(text.substr(start));
      break;
    }
    parts.push_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  if (parts.size() != 4 || text.find('/', start) != std::string_view::npos) return {};
  for (std::string_view part : parts) {
    if (part.empty()) return {};
  }
  return parts;
}

}  // namespace

std::string StartTimeFromStat(std::string_view stat) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // after the last ')'. Field 22 (starttime) is the 20th field after comm.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return "";
  std::string_view rest = stat.substr(close + 1);
  int field = 2;
  size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    if (pos < end && ++field == 22) {
      std::string_view value = rest.substr(pos, end - pos);
      while (!value.empty() && value.back() == '\n') value.remove_suffix(1);
      return std::string(value);
    }
    pos = end;
  }
  return "";
}

LocalIdentity CurrentIdentity() {
  LocalIdentity identity;
  // systemd's file, or dbus's older one; a host with neither is named by its hostname alone.
  std::string machine =
      FirstReadable({"/etc/machine-id", "/var/lib/dbus/machine-id"}, "no-machine-id");
  struct utsname names {};
  std::string hostname = ::uname(&names) == 0 ? std::string(names.nodename) : "no-hostname";
  // '/' separates the label's parts; neither value can hold one, but a broken file might.
  for (char& c : machine) c = c == '/' ? '_' : c;
  identity.host = machine + "/" + hostname;
  identity.boot_id = FirstReadable({"/proc/sys/kernel/random/boot_id"}, "unknown");
  struct stat ns {};
  identity.pid_ns = ::stat("/proc/self/ns/pid", &ns) == 0 ? std::to_string(ns.st_ino) : "unknown";
  return identity;
}

std::string CurrentOwner() {
  static const LocalIdentity identity = CurrentIdentity();
  long pid = static_cast<long>(::getpid());
  return fmt::format("{}/{}/{}/{}", identity.boot_id, identity.pid_ns, pid, StartTimeOf(pid));
}

bool ProcessRuns(long pid, std::string_view start) { return StartTimeOf(pid) == start; }

namespace {

// What the labels of host and process say, before the replica is considered.
OwnerJudgement JudgeProcess(const LocalIdentity& local, std::string_view host_label,
                            std::string_view owner_label,
                            const std::function<bool(long pid, std::string_view start)>& running) {
  if (host_label.empty()) {
    return {OwnerVerdict::kNotJudged, "it has no host label (made by an older mcp-sandbox)"};
  }
  if (host_label != local.host) {
    return {OwnerVerdict::kNotJudged, fmt::format("it belongs to host {}", host_label)};
  }
  std::vector<std::string_view> parts = FourParts(owner_label);
  if (parts.empty()) {
    // Our host wrote the labels, so no live server of ours can be named by a malformed owner.
    return {OwnerVerdict::kGone, "its owner label is malformed"};
  }
  if (parts[0] != local.boot_id) return {OwnerVerdict::kGone, "its owner ran before a reboot"};
  if (parts[1] != local.pid_ns) {
    return {OwnerVerdict::kNotJudged,
            fmt::format("its owner runs in another pid namespace ({}) of this host", parts[1])};
  }
  long pid = 0;
  auto [end, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), pid);
  if (ec != std::errc() || end != parts[2].data() + parts[2].size() || pid <= 0) {
    return {OwnerVerdict::kGone, "its owner label is malformed"};
  }
  if (running(pid, parts[3])) return {OwnerVerdict::kAlive, "its owner runs"};
  return {OwnerVerdict::kGone, "its owner is gone"};
}

}  // namespace

OwnerJudgement JudgeOwner(const LocalIdentity& local, std::string_view host_label,
                          std::string_view owner_label,
                          const std::function<bool(long pid, std::string_view start)>& running,
                          std::string_view replica_label) {
  OwnerJudgement judged = JudgeProcess(local, host_label, owner_label, running);
  if (judged.verdict == OwnerVerdict::kNotJudged && !local.replica.empty() &&
      replica_label == local.replica) {
    return {OwnerVerdict::kGone, fmt::format("it belongs to an earlier run of replica {} ({})",
                                             local.replica, judged.why)};
  }
  return judged;
}

}  // namespace sandbox::docker
