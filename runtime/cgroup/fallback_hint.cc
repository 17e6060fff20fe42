#include "runtime/cgroup/fallback_hint.h"

#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace sandbox::cgroup {

std::string FallbackHint(const FallbackHost& host) {
  if (host.root || !host.cgroup2) return "";
  if (!host.user_manager) {
    return "for real limits, start a systemd user manager for this user with "
           "`loginctl enable-linger` (then log in again)";
  }
  return "for real limits, start the server under "
         "`systemd-run --user --scope -p Delegate=yes mcp-sandbox serve`";
}

FallbackHost ProbeFallbackHost() {
  FallbackHost host;
  host.root = ::geteuid() == 0;
  struct statfs fs {};
  host.cgroup2 = ::statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
  // The user manager listens on $XDG_RUNTIME_DIR/bus (sd-bus's default user bus address), which
  // exists only while user@UID.service runs: a login session or linger.
  const char* runtime_dir = ::getenv("XDG_RUNTIME_DIR");
  struct stat st {};
  host.user_manager = runtime_dir != nullptr && *runtime_dir == '/' &&
                      ::stat((std::string(runtime_dir) + "/bus").c_str(), &st) == 0 &&
                      S_ISSOCK(st.st_mode);
  return host;
}

}  // namespace sandbox::cgroup
