#include "runtime/agent/init/process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

namespace sandbox::agent {
namespace {

constexpr int kMaxPasses = 32;

// The process group of `pid` from /proc/PID/stat, or -1 when it is gone or unreadable.
// Field 5; the command (field 2) may hold spaces and parentheses, so parse after the last ')'.
pid_t ProcessGroupOf(const char* pid) {
  std::string path = std::string("/proc/") + pid + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buffer[512];
  ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buffer[n] = '\0';
  const char* rest = std::strrchr(buffer, ')');
  if (rest == nullptr) return -1;
  char state = 0;
  long ppid = 0;
  long pgrp = 0;
  if (std::sscanf(rest + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return -1;
  if (state == 'Z') return -1;  // already dead, waiting for init to reap it
  return static_cast<pid_t>(pgrp);
}

// One pass over /proc: SIGKILLs every live member, those signalled before too: gVisor's Sentry
// hands a freed pid to the next fork at once, so a pid signalled in an earlier pass may be a new
// child of the group by now (a fork bomb then outlived the kill); a member still dying takes
// one more SIGKILL harmlessly. Returns how many it found.
int KillPass(pid_t pgid, pid_t keep, std::set<long>& signalled) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return 0;
  int killed = 0;
  while (struct dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid == keep || pid == ::getpid()) continue;
    if (ProcessGroupOf(entry->d_name) != pgid) continue;
    if (::kill(static_cast<pid_t>(pid), SIGKILL) == 0) {
      signalled.insert(pid);
      ++killed;
    }
  }
  ::closedir(dir);
  return killed;
}

}  // namespace

int KillGroupExcept(pid_t pgid, pid_t keep, std::vector<pid_t>* killed) {
  std::set<long> signalled;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    if (KillPass(pgid, keep, signalled) == 0) break;
    ::sched_yield();  // the killed ones die (become zombies) before the next look
  }
  if (killed != nullptr) {
    for (long pid : signalled) killed->push_back(static_cast<pid_t>(pid));
  }
  return static_cast<int>(signalled.size());
}

}  // namespace sandbox::agent
