#include "runtime/docker/owner.h"

#include <unistd.h>

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/files.h"

namespace sandbox::docker {
namespace {

std::string BootId() {
  auto text = ReadFile("/proc/sys/kernel/random/boot_id");
  if (!text) return "unknown";
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text;
}

std::string StartTimeOf(long pid) {
  auto stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  return stat ? StartTimeFromStat(*stat) : std::string();
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

std::string CurrentOwner() {
  long pid = static_cast<long>(::getpid());
  return fmt::format("{}/{}/{}", BootId(), pid, StartTimeOf(pid));
}

bool OwnerIsAlive(std::string_view owner) {
  size_t first = owner.find('/');
  size_t second = first == std::string_view::npos ? first : owner.find('/', first + 1);
  if (second == std::string_view::npos) return false;
  std::string_view boot = owner.substr(0, first);
  std::string_view pid_text = owner.substr(first + 1, second - first - 1);
  std::string_view start = owner.substr(second + 1);
  long pid = 0;
  auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (ec != std::errc() || end != pid_text.data() + pid_text.size() || pid <= 0 || start.empty()) {
    return false;
  }
  if (boot != BootId()) return false;
  return StartTimeOf(pid) == start;
}

}  // namespace sandbox::docker
