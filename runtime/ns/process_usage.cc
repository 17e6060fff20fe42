#include "runtime/ns/process_usage.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/files.h"

namespace sandbox::ns {

namespace {

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(task_dir.c_str());
  if (dir == nullptr) return children;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    Result<std::string> text = ReadFile(task_dir + "/" + entry->d_name + "/children");
    if (!text) continue;
    std::string_view rest = *text;
    while (!rest.empty()) {
      pid_t child = 0;
      auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), child);
      if (ec != std::errc()) break;
      children.push_back(child);
      rest.remove_prefix(static_cast<size_t>(ptr - rest.data()));
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    }
  }
  ::closedir(dir);
  return children;
}

// Fields 14-17 of /proc/<pid>/stat: utime stime cutime cstime (clock ticks).
bool ReadCpuTicks(pid_t pid, bool with_children, uint64_t* ticks) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return false;
  std::string_view rest = std::string_view(*stat).substr(close + 2);
  int field = 3;
  uint64_t sum = 0;
  while (!rest.empty() && field <= 17) {
    size_t space = rest.find(' ');
    std::string_view value = rest.substr(0, space);
    if (field >= 14 && (field <= 15 || with_children)) {
      uint64_t v = 0;
      std::from_chars(value.data(), value.data() + value.size(), v);
      sum += v;
    }
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
    ++field;
  }
  *ticks += sum;
  return true;
}

uint64_t ResidentBytes(pid_t pid) {
  Result<std::string> statm = ReadFile("/proc/" + std::to_string(pid) + "/statm");
  if (!statm) return 0;
  std::string_view text = *statm;
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return 0;
  text.remove_prefix(space + 1);
  uint64_t pages = 0;
  std::from_chars(text.data(), text.data() + text.size(), pages);
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

SandboxUsage ProcessTreeUsage(pid_t init) {
  SandboxUsage usage;
  uint64_t ticks = 0;
  std::vector<pid_t> pending = {init};
  while (!pending.empty() && usage.pids < 100000) {
    pid_t pid = pending.back();
    pending.pop_back();
    if (!ReadCpuTicks(pid, /*with_children=*/pid == init, &ticks)) continue;
    usage.pids++;
    usage.memory_bytes += ResidentBytes(pid);
    for (pid_t child : ChildrenOf(pid)) pending.push_back(child);
  }
  usage.cpu_seconds = static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return usage;
}

}  // namespace sandbox::ns
