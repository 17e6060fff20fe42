#include "runtime/session/egress_bytes_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string_view>

#include "runtime/base/files.h"
#include "runtime/sandbox_layout.h"

namespace sandbox {
namespace {

constexpr char kBytesSuffix[] = ".bytes";
constexpr size_t kSize = sizeof(uint64_t);

bool ValidSessionId(const std::string& session_id) {
  return !session_id.empty() && session_id.find('/') == std::string::npos && session_id != "." &&
         session_id != "..";
}

}  // namespace

std::string EgressBytesDir(const std::string& state_dir) { return state_dir + "/egress-bytes"; }

Result<std::unique_ptr<EgressBytesFile>> EgressBytesFile::Create(const std::string& dir,
                                                                 const std::string& session_id) {
  if (!ValidSessionId(session_id)) {
    return Fail(ErrorCode::kInvalidArgument, "session id '{}' cannot name a file", session_id);
  }
  SBX_TRY(MakeDirs(dir, 0700));
  std::unique_ptr<EgressBytesFile> published(new EgressBytesFile());
  published->path_ = dir + "/" + session_id + kBytesSuffix;
  // Made and locked under a name of its own, then renamed: the final name is never unlocked
  // while its server lives, so a concurrent sweep cannot take it.
  std::string temporary = published->path_ + ".new." + std::to_string(::getpid());
  published->file_ =
      Fd(::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!published->file_) return FailSys("open", temporary);
  auto fail = [&](std::string_view call) {
    auto error = SysError(call, temporary);
    ::unlink(temporary.c_str());
    return Fail(std::move(error));
  };
  if (::flock(published->file_.get(), LOCK_SH) != 0) return fail("flock");
  if (::ftruncate(published->file_.get(), kSize) != 0) return fail("ftruncate");
  void* map = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, published->file_.get(), 0);
  if (map == MAP_FAILED) return fail("mmap");
  published->counter_ = static_cast<uint64_t*>(map);
  if (::rename(temporary.c_str(), published->path_.c_str()) != 0) {
    auto error = SysError("rename", temporary);
    ::unlink(temporary.c_str());
    published->path_.clear();
    return Fail(std::move(error));
  }
  return published;
}

EgressBytesFile::~EgressBytesFile() {
  if (counter_ != nullptr) ::munmap(counter_, kSize);
  if (!path_.empty()) ::unlink(path_.c_str());
}

std::optional<uint64_t> ReadEgressBytes(const std::string& dir, const std::string& session_id) {
  if (!ValidSessionId(session_id)) return std::nullopt;
  std::string path = dir + "/" + session_id + kBytesSuffix;
  Fd file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!file) return std::nullopt;
  // Nobody holding it: a crashed server's count, not a session's.
  if (::flock(file.get(), LOCK_EX | LOCK_NB) == 0) return std::nullopt;
  void* map = ::mmap(nullptr, kSize, PROT_READ, MAP_SHARED, file.get(), 0);
  if (map == MAP_FAILED) return std::nullopt;
  uint64_t bytes = std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(map)).load();
  ::munmap(map, kSize);
  return bytes;
}

int SweepEgressBytesFiles(const std::string& dir) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return 0;
  int removed = 0;
  while (struct dirent* entry = ::readdir(listing)) {
    std::string_view name = entry->d_name;
    if (!name.starts_with(layout::kSessionIdPrefix) ||
        (!name.ends_with(kBytesSuffix) &&
         name.find(std::string(kBytesSuffix) + ".new.") == name.npos)) {
      continue;
    }
    Fd file(::openat(::dirfd(listing), entry->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!file || ::flock(file.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a live server's
    if (::unlinkat(::dirfd(listing), entry->d_name, 0) == 0) ++removed;
  }
  ::closedir(listing);
  return removed;
}

}  // namespace sandbox
