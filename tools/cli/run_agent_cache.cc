#include "tools/cli/run_agent_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/base/base64.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/session_manager.h"

namespace sandbox::cli {
namespace {

// The files of an agent dir a sandbox uses; the kept copy has them all, plus worker.pyc.
constexpr const char* kAgentFiles[] = {"sandbox-init", "worker.py", "session_state.py"};

// Run in the fresh sandbox by its worker: worker.py as the image's Python compiles a script
// (the same flags, the name it has at /.sandbox), as a .pyc: the magic number, the flags word 0
// (a timestamp .pyc, whose date and size Python does not check for a script run from its byte
// code), 8 zero bytes, the marshalled code; printed in base64.
constexpr char kCompileCell[] = R"(import base64, importlib.util, marshal
with open("/.sandbox/worker.py", "rb") as source:
    code = compile(source.read(), "/.sandbox/worker.py", "exec", dont_inherit=True)
print(base64.b64encode(importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)).decode())
)";

// A file by device, inode, size and mtime: replaced or rebuilt, it is another.
std::string FileKey(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "?";
  return fmt::format("{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

std::string CacheRoot(const SessionConfig& config) {
  return fmt::format("{}/probe-cache/agent.{}", config.state_dir, ::geteuid());
}

// What the kept copy is for: the image and the agent's files. Kept in the copy as `key`.
std::string KeyFor(const SessionConfig& config, const ResolvedImage& image) {
  std::string key = fmt::format("rootfs={}\ndocker={}\n", image.rootfs, image.docker.reference);
  for (const char* name : kAgentFiles) {
    key += fmt::format("{}={}\n", name, FileKey(config.agent_dir + "/" + name));
  }
  return key;
}

// The copy's directory name: FNV-1a of the key. Not a digest (loading libcrypto for one would
// cost a run more than a millisecond): a collision only means a copy whose `key` file differs,
// which is never used and is made again.
std::string DirNameFor(std::string_view key) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : key) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return fmt::format("{:016x}", hash);
}

// The runner's own file, not writable by others, no symlink; its content when it is.
std::optional<std::string> ReadOwnFile(const std::string& path, size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || static_cast<size_t>(st.st_size) > max_bytes) {
    return std::nullopt;
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::pread(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return std::nullopt;
  }
  return text;
}

// A kept copy made by this user for `key`: the dir and its files the runner's own, not
// writable by others, no symlink.
bool Trusted(const std::string& dir, const std::string& key) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return false;
  }
  auto kept_key = ReadOwnFile(dir + "/key", 64 << 10);
  if (!kept_key || *kept_key != key) return false;
  Fd pyc(::open((dir + "/worker.pyc").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return pyc && ::fstat(pyc.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// worker.py compiled by a fresh sandbox of the image that runs only kCompileCell.
Result<std::string> CompileInSandbox(const SessionConfig& config,
                                     const std::shared_ptr<Backend>& backend,
                                     const ImageResolver& resolver) {
  // A manager of its own for one session: no pool, no hibernation, plain agent dir.
  SessionConfig plain = config;
  plain.pool_size = 0;
  plain.hibernate_after = std::chrono::milliseconds{0};
  plain.agent_dir_for = nullptr;
  plain.agent_dir_failed = nullptr;
  SessionManager manager(plain, backend, resolver);
  SBX_ASSIGN_OR_RETURN(SessionInfo session, manager.Create({}));
  RunRequest request;
  request.code = kCompileCell;
  request.timeout_s = 60;
  request.max_output_bytes = 4 << 20;
  auto result = manager.Run(session.id, request, nullptr, nullptr);
  (void)manager.Close(session.id, /*force=*/true);
  if (!result) return Fail(std::move(result.error()));
  if (result->exit_code != 0 || result->stdout_truncated) {
    return Fail(ErrorCode::kInternal, "compiling worker.py exited {}: {}", result->exit_code,
                result->stderr_text.substr(0, 500));
  }
  std::string_view text = result->stdout_text;
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  auto pyc = Base64Decode(text);
  // The header (16 bytes) and a marshalled code object ('c', or 0xe3 with its reference flag).
  if (!pyc || pyc->size() < 17 || pyc->compare(4, 12, std::string(12, '\0')) != 0 ||
      ((*pyc)[16] & 0x7f) != 'c') {
    return Fail(ErrorCode::kInternal, "compiling worker.py gave no byte code");
  }
  return *pyc;
}

// The agent's files in `dir`: hard links where the filesystem and ownership allow, else copies.
Status PlaceAgentFiles(const std::string& from, const std::string& dir) {
  for (const char* name : kAgentFiles) {
    std::string source = from + "/" + name;
    std::string target = dir + "/" + name;
    if (::link(source.c_str(), target.c_str()) == 0) continue;
    SBX_TRY(CopyFileAtomic(source, target));
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0) return FailSys("stat", source);
    if (::chmod(target.c_str(), st.st_mode & 0755) != 0) return FailSys("chmod", target);
  }
  return {};
}

Result<std::string> MakeCompiledAgentDir(const SessionConfig& config,
                                         const std::shared_ptr<Backend>& backend,
                                         const ImageResolver& resolver) {
  SBX_ASSIGN_OR_RETURN(ResolvedImage image, resolver(config.default_image));
  const std::string key = KeyFor(config, image);
  const std::string root = CacheRoot(config);
  const std::string dir = root + "/" + DirNameFor(key);
  if (Trusted(dir, key)) return dir;

  SBX_ASSIGN_OR_RETURN(std::string pyc, CompileInSandbox(config, backend, resolver));
  SBX_TRY(MakeDirs(root, 0700));
  // Made whole beside its final name, then renamed: a concurrent run sees all or nothing.
  const std::string partial = fmt::format("{}.{}.partial", dir, ::getpid());
  (void)RemoveTree(partial);
  if (::mkdir(partial.c_str(), 0755) != 0) return FailSys("mkdir", partial);
  Status placed = PlaceAgentFiles(config.agent_dir, partial);
  if (placed) placed = WriteFileAtomic(partial + "/worker.pyc", pyc, 0644);
  if (placed) placed = WriteFileAtomic(partial + "/key", key, 0644);
  if (placed && ::chmod(partial.c_str(), 0755) != 0) placed = FailSys("chmod", partial);
  if (placed && ::rename(partial.c_str(), dir.c_str()) != 0) {
    int err = errno;
    if ((err == ENOTEMPTY || err == EEXIST) && !Trusted(dir, key)) {
      // A copy for another key under the same name, or one left broken: this one replaces it.
      (void)RemoveTree(dir);
      if (::rename(partial.c_str(), dir.c_str()) == 0) return dir;
      err = errno;
    }
    // Else another run kept the same copy first: use it.
    (void)RemoveTree(partial);
    if ((err == ENOTEMPTY || err == EEXIST) && Trusted(dir, key)) return dir;
    return FailSys("rename", dir, err);
  }
  if (!placed) {
    (void)RemoveTree(partial);
    return Fail(std::move(placed.error()));
  }
  return dir;
}

}  // namespace

std::string CompiledAgentDir(const SessionConfig& config, const std::shared_ptr<Backend>& backend,
                             const ImageResolver& resolver) {
  auto dir = MakeCompiledAgentDir(config, backend, resolver);
  if (!dir) {
    spdlog::debug("the worker's byte code is not kept: {}", dir.error().message);
    return config.agent_dir;
  }
  return *dir;
}

std::string KeptAgentDir(const SessionConfig& config, const ResolvedImage& image) {
  const std::string key = KeyFor(config, image);
  std::string dir = CacheRoot(config) + "/" + DirNameFor(key);
  return Trusted(dir, key) ? dir : std::string();
}

void ForgetCompiledAgentDir(const SessionConfig& config, const std::string& dir) {
  if (dir == config.agent_dir || dir.rfind(CacheRoot(config) + "/", 0) != 0) return;
  (void)RemoveTree(dir);
}

void UseKeptWorkerByteCode(SessionConfig& config, const std::shared_ptr<Backend>& backend,
                           const ImageResolver& resolver) {
  (void)CompiledAgentDir(config, backend, resolver);
  // The lookups need only the state and agent dirs: a copy of those, not of the whole config.
  SessionConfig dirs;
  dirs.state_dir = config.state_dir;
  dirs.agent_dir = config.agent_dir;
  config.agent_dir_for = [dirs](const ResolvedImage& image) { return KeptAgentDir(dirs, image); };
  config.agent_dir_failed = [dirs](const std::string& dir) {
    spdlog::warn("a sandbox did not start on the kept worker byte code {}: forgotten", dir);
    ForgetCompiledAgentDir(dirs, dir);
  };
}

}  // namespace sandbox::cli
