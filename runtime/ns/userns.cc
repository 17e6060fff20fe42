#include "runtime/ns/userns.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <random>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/ns/process_identity.h"

namespace sandbox::ns {

std::string IdMapLine(uint32_t inside, uint32_t host) {
  return std::to_string(inside) + " " + std::to_string(host) + " 1\n";
}

namespace {

// A map file must be written with one write(2) (user_namespaces(7)).
Status WriteProcFile(pid_t pid, const char* name, const std::string& content) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return FailSys("open", path);
  ssize_t n = ::write(fd.get(), content.data(), content.size());
  if (n < 0) return FailSys("write", path);
  if (static_cast<size_t>(n) != content.size()) {
    return Fail(ErrorCode::kInternal, "write({}): short write", path);
  }
  return {};
}

}  // namespace

Status WriteIdMappings(pid_t pid, const IdMapping& mapping) {
  if (mapping.deny_setgroups) SBX_TRY(WriteProcFile(pid, "setgroups", "deny"));
  SBX_TRY(WriteProcFile(pid, "uid_map", IdMapLine(mapping.inside_uid, mapping.host_uid)));
  SBX_TRY(WriteProcFile(pid, "gid_map", IdMapLine(mapping.inside_gid, mapping.host_gid)));
  return {};
}

HostIdAllocator::HostIdAllocator(std::string claim_dir) : claim_dir_(std::move(claim_dir)) {
  // Start at a random slot so that servers sharing the range rarely contend.
  next_slot_ = std::random_device{}() % kHostIdCount;
}

Result<uint32_t> HostIdAllocator::Claim(const std::string& session_id) {
  SBX_TRY(MakeDirs(claim_dir_, 0700));
  Result<ProcessIdentity> self = IdentifyProcess(::getpid());
  if (!self) return Fail(std::move(self.error()).Context("identify the server process"));
  std::string content = self->ToString() + " " + session_id + "\n";

  std::lock_guard<std::mutex> lock(mutex_);
  for (uint32_t tries = 0; tries < kHostIdCount; ++tries) {
    uint32_t slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % kHostIdCount;
    uint32_t id = kHostIdBase + slot;
    std::string path = claim_dir_ + "/" + std::to_string(id);
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) {
      if (errno == EEXIST) continue;
      return FailSys("create host id claim", path);
    }
    if (auto written = WriteAll(fd.get(), content); !written) {
      ::unlink(path.c_str());
      return Fail(std::move(written.error()).Context("write host id claim"));
    }
    return id;
  }
  return Fail(ErrorCode::kMaxSessions, "all {} sandbox host ids in {} are claimed", kHostIdCount,
              claim_dir_);
}

void HostIdAllocator::Release(uint32_t host_id) {
  std::string path = claim_dir_ + "/" + std::to_string(host_id);
  ::unlink(path.c_str());
}

std::vector<HostIdAllocator::StaleClaim> HostIdAllocator::StaleClaims() const {
  std::vector<StaleClaim> stale;
  DIR* dir = ::opendir(claim_dir_.c_str());
  if (dir == nullptr) return stale;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    uint32_t id = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (ec != std::errc() || end != name.data() + name.size()) continue;
    if (id < kHostIdBase || id >= kHostIdBase + kHostIdCount) continue;
    Result<std::string> content = ReadFile(claim_dir_ + "/" + std::string(name));
    if (!content) continue;
    // "pid starttime session_id"
    std::optional<ProcessIdentity> owner = ProcessIdentity::Parse(*content);
    if (owner && owner->IsAlive()) continue;
    std::string session_id;
    if (size_t space = content->rfind(' '); space != std::string::npos) {
      session_id = content->substr(space + 1);
      while (!session_id.empty() && session_id.back() == '\n') session_id.pop_back();
    }
    stale.push_back({id, session_id});
  }
  ::closedir(dir);
  return stale;
}

}  // namespace sandbox::ns
