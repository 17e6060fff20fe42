#include "runtime/session/egress_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "runtime/base/files.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/session_id.h"

namespace sandbox {
namespace {

constexpr char kSocketSuffix[] = ".sock";

// The socket's file name: the session id without its replica, sess_<replica>_<hex> as
// sess_<hex>. A replica id may be 63 characters, and the whole id would not fit sun_path; the
// 128 random bits alone tell sessions apart, also between replicas that share a state dir.
std::string SocketNameFor(const std::string& session_id) {
  auto parsed = ParseSessionId(session_id);
  if (!parsed || parsed->replica.empty()) return session_id + kSocketSuffix;
  std::string_view prefix = layout::kSessionIdPrefix;
  return std::string(prefix) + session_id.substr(prefix.size() + parsed->replica.size() + 1) +
         kSocketSuffix;
}

// Opens `dir` (made if missing) and makes sure only its owner, this process's user, can enter.
Result<Fd> OpenPrivateDir(const std::string& dir) {
  SBX_TRY(MakeDirs(dir, 0700));
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return FailSys("open", dir);
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) return FailSys("fstat", dir);
  if (st.st_uid != ::geteuid()) {
    return Fail(ErrorCode::kInternal, "{} belongs to uid {}, not to this server (uid {})", dir,
                st.st_uid, ::geteuid());
  }
  if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0) return FailSys("fchmod", dir);
  return fd;
}

}  // namespace

std::string EgressSocketDir(const std::string& state_dir) { return state_dir + "/egress"; }

EgressSocket& EgressSocket::operator=(EgressSocket&& other) noexcept {
  if (this != &other) {
    Remove();
    listener_ = std::move(other.listener_);
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

Result<EgressSocket> EgressSocket::Listen(const std::string& dir, const std::string& session_id) {
  if (session_id.empty() || session_id.find('/') != std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "session id '{}' cannot name a socket", session_id);
  }
  SBX_ASSIGN_OR_RETURN(Fd dir_fd, OpenPrivateDir(dir));
  const std::string name = SocketNameFor(session_id);
  // Bound through the directory's fd: a state dir path of any length fits sun_path this way.
  const std::string via_fd = "/proc/self/fd/" + std::to_string(dir_fd.get()) + "/" + name;
  struct sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (via_fd.size() >= sizeof address.sun_path) {
    return Fail(ErrorCode::kInvalidArgument, "session id '{}' is too long", session_id);
  }
  std::memcpy(address.sun_path, via_fd.c_str(), via_fd.size() + 1);

  EgressSocket socket;
  socket.listener_ = Fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!socket.listener_) return FailSys("socket", "egress channel");
  if (::bind(socket.listener_.get(), reinterpret_cast<struct sockaddr*>(&address),
             sizeof address) != 0) {
    return FailSys("bind", dir + "/" + name);
  }
  socket.path_ = dir + "/" + name;  // from here on, the destructor removes it
  // The sandbox's uid is not ours: it needs write permission on the socket itself. The
  // directory (0700) keeps every other host user away from it.
  if (::fchmodat(dir_fd.get(), name.c_str(), 0666, 0) != 0) return FailSys("chmod", socket.path_);
  if (::listen(socket.listener_.get(), 1) != 0) return FailSys("listen", socket.path_);
  return socket;
}

Result<Fd> EgressSocket::AcceptOnce(std::chrono::milliseconds wait) {
  if (!listener_) return Fail(ErrorCode::kInternal, "egress socket: not listening");
  struct pollfd ready = {listener_.get(), POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int polled = ::poll(&ready, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (polled > 0) break;
    if (polled < 0 && errno != EINTR) {
      int poll_errno = errno;
      std::string path = path_;
      Remove();
      return FailSys("poll", path, poll_errno);
    }
    if (polled == 0) {
      std::string path = path_;
      Remove();
      return Fail(ErrorCode::kSandboxUnavailable,
                  "sandbox-init did not connect to its egress socket {} within {} ms", path,
                  wait.count());
    }
  }
  // Blocking, like the socketpair end the proxy gets on the namespace backend.
  Fd channel(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  int accept_errno = errno;
  std::string path = path_;
  Remove();  // one connection only: later ones find no listener
  if (!channel) return FailSys("accept", path, accept_errno);
  return channel;
}

void EgressSocket::Remove() {
  if (!path_.empty()) {
    (void)::unlink(path_.c_str());
    path_.clear();
  }
  listener_.Reset();
}

int SweepEgressSockets(const std::string& dir, std::chrono::seconds older_than) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return 0;
  const time_t cutoff = ::time(nullptr) - static_cast<time_t>(older_than.count());
  int removed = 0;
  while (struct dirent* entry = ::readdir(listing)) {
    std::string_view name = entry->d_name;
    if (!name.starts_with(layout::kSessionIdPrefix) || !name.ends_with(kSocketSuffix)) continue;
    struct stat st = {};
    if (::fstatat(::dirfd(listing), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISSOCK(st.st_mode) || st.st_mtime > cutoff) continue;
    if (::unlinkat(::dirfd(listing), entry->d_name, 0) == 0) ++removed;
  }
  ::closedir(listing);
  return removed;
}

}  // namespace sandbox
