#include "seccomp/program_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "seccomp/compile.h"
#include "seccomp/policy_spec.h"

namespace sandbox::seccomp {
namespace {

// Bumped when the key or the file changes meaning, so an older binary's file never matches.
constexpr const char* kFormat = "mcp-sandbox seccomp program cache 1";
constexpr off_t kMaxFileBytes = (64 << 10) + BPF_MAXINSNS * sizeof(sock_filter);

// A file by device, inode, size and mtime: replaced or rebuilt, it is another.
std::string FileKey(const char* path) {
  struct stat st {};
  if (path == nullptr || ::stat(path, &st) != 0) return "?";
  return fmt::format("{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

// The file libseccomp was loaded from (a distribution's patch release keeps the version).
const char* LibseccompFile() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&seccomp_version), &info) == 0) return nullptr;
  return info.dli_fname;
}

std::string Header(const std::string& key, size_t instructions) {
  return fmt::format("{}program={}\n", key, instructions);
}

}  // namespace

std::string ProgramCacheKey() {
  const scmp_version* version = seccomp_version();
  std::string key = fmt::format("{}\n", kFormat);
  key += fmt::format("binary={}\n", FileKey("/proc/self/exe"));
  key += fmt::format("libseccomp={}.{}.{} {}\n", version->major, version->minor, version->micro,
                     FileKey(LibseccompFile()));
  return key;
}

std::string ProgramCachePath(const std::string& state_dir) {
  return fmt::format("{}/probe-cache/seccomp-program.{}", state_dir, ::geteuid());
}

std::optional<BpfProgram> LoadKeptProgram(const std::string& path, const std::string& key) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_size > kMaxFileBytes) {
    return std::nullopt;
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::pread(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return std::nullopt;
  }
  if (text.compare(0, key.size(), key) != 0) return std::nullopt;
  // The rest: "program=N\n", then N instructions and nothing more.
  const size_t end = text.find('\n', key.size());
  if (end == std::string::npos) return std::nullopt;
  const std::string line = text.substr(key.size(), end + 1 - key.size());
  unsigned long count = 0;
  if (std::sscanf(line.c_str(), "program=%lu\n", &count) != 1 || count == 0 ||
      count > BPF_MAXINSNS || line != Header("", count) ||
      text.size() - (end + 1) != count * sizeof(sock_filter)) {
    return std::nullopt;
  }
  std::vector<sock_filter> filter(count);
  std::memcpy(filter.data(), text.data() + end + 1, count * sizeof(sock_filter));
  return BpfProgram(std::move(filter));
}

void KeepProgram(const std::string& path, const std::string& key, const BpfProgram& program) {
  if (program.size() == 0 || program.size() > BPF_MAXINSNS) return;
  std::string dir = path.substr(0, path.rfind('/'));
  if (!MakeDirs(dir, 0700)) return;
  std::string text = Header(key, program.size());
  text.append(reinterpret_cast<const char*>(program.instructions().data()),
              program.size() * sizeof(sock_filter));
  (void)WriteFileAtomic(path, text, 0600);
}

Result<BpfProgram> LoadOrCompileSandboxPolicy(const std::string& path) {
  if (path.empty()) return CompilePolicy(SandboxPolicy());
  const std::string key = ProgramCacheKey();
  if (std::optional<BpfProgram> kept = LoadKeptProgram(path, key)) return std::move(*kept);
  Result<BpfProgram> compiled = CompilePolicy(SandboxPolicy());
  if (compiled) KeepProgram(path, key, *compiled);
  return compiled;
}

void ForgetKeptProgram(const std::string& path) { ::unlink(path.c_str()); }

}  // namespace sandbox::seccomp
