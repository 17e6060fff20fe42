#include "runtime/probe/probe_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox::probe {
namespace {

// Bumped when the key or the file changes meaning, so an older binary's file never matches.
constexpr const char* kFormat = "mcp-sandbox host probe cache 1";
constexpr const char* kPass = "namespaces=ok";

std::string FirstLine(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return "";
  return text->substr(0, text->find('\n'));
}

// A file by device, inode, size and mtime: replaced or rebuilt, it is another.
std::string FileKey(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) return "?";
  return fmt::format("{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

// A namespace by its inode (nsfs gives each /proc/PID/ns file the time it was first looked at
// as mtime, so that part would differ in every process).
std::string NamespaceKey(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) return "?";
  return fmt::format("{}:{}", st.st_dev, st.st_ino);
}

// "Seccomp:" and "Seccomp_filters:" of /proc/self/status: a filter we run under (a container's)
// may forbid what the probes tried.
std::string SeccompKey() {
  auto status = ReadFile("/proc/self/status");
  if (!status) return "?";
  std::string key;
  for (const char* field : {"\nSeccomp:", "\nSeccomp_filters:"}) {
    size_t at = status->find(field);
    if (at == std::string::npos) continue;
    size_t end = status->find('\n', at + 1);
    key += status->substr(at + 1, end - at - 1);
    key += ' ';
  }
  return key;
}

// The cgroup filesystems mounted (mount point, type, options): a remount or a switch between
// v1 and v2 re-probes.
std::string CgroupMountsKey() {
  auto mountinfo = ReadFile("/proc/self/mountinfo");
  if (!mountinfo) return "?";
  std::string key;
  size_t start = 0;
  while (start < mountinfo->size()) {
    size_t end = mountinfo->find('\n', start);
    if (end == std::string::npos) end = mountinfo->size();
    std::string_view line(mountinfo->data() + start, end - start);
    if (line.find(" - cgroup") != std::string_view::npos) {
      // Skip the mount id and parent id (they count mounts, not layout).
      size_t skip = line.find(' ', line.find(' ') + 1);
      key += std::string(line.substr(skip == std::string_view::npos ? 0 : skip + 1));
      key += ';';
    }
    start = end + 1;
  }
  return key;
}

}  // namespace

std::string HostProbeKey() {
  struct utsname uts {};
  ::uname(&uts);
  std::string key = fmt::format("{}\n", kFormat);
  key += fmt::format("kernel={} {}\n", uts.release, uts.version);
  key += fmt::format("boot_id={}\n", FirstLine("/proc/sys/kernel/random/boot_id"));
  key += fmt::format("ids={}:{}\n", ::geteuid(), ::getegid());
  key += fmt::format("user_ns={}\n", NamespaceKey("/proc/self/ns/user"));
  key += fmt::format("seccomp={}\n", SeccompKey());
  for (const char* sysctl :
       {"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"}) {
    key += fmt::format("{}={}\n", sysctl, FirstLine(sysctl));
  }
  key += fmt::format("cgroup_mounts={}\n", CgroupMountsKey());
  key += fmt::format("binary={}\n", FileKey("/proc/self/exe"));
  return key;
}

std::string ProbeCachePath(const std::string& state_dir) {
  return fmt::format("{}/probe-cache/host-probe.{}", state_dir, ::geteuid());
}

bool CachedNamespacesOk(const std::string& path, const std::string& key) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_size > (64 << 10)) {
    return false;
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::pread(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return false;
  }
  return text == key + kPass + "\n";
}

void RememberNamespacesOk(const std::string& path, const std::string& key) {
  std::string dir = path.substr(0, path.rfind('/'));
  if (!MakeDirs(dir, 0700)) return;
  (void)WriteFileAtomic(path, key + kPass + "\n", 0600);
}

void ForgetNamespaceVerdict(const std::string& path) { ::unlink(path.c_str()); }

}  // namespace sandbox::probe
