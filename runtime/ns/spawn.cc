#include "runtime/ns/spawn.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>

#include <spdlog/spdlog.h>

#include "runtime/ns/pidfd.h"

namespace sandbox::ns {

namespace {

// struct clone_args of <linux/sched.h> (that header clashes with glibc's <sched.h>).
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
  uint64_t set_tid;
  uint64_t set_tid_size;
  uint64_t cgroup;
};
constexpr uint64_t kCloneIntoCgroup = 0x200000000ULL;
constexpr size_t kMaxLoggedBytesPerPipe = 64 << 10;

}  // namespace

struct Spawner::Request {
  const ChildPlan* plan = nullptr;
  int cgroup_fd = -1;
  std::vector<Fd>* child_fds = nullptr;
  uid_t namespace_owner = static_cast<uid_t>(-1);

  Result<SpawnedChild> result = Fail(ErrorCode::kInternal, "spawner did not run");
  bool done = false;
};

Spawner::Spawner() {
  wake_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  epoll_.Reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!wake_ || !epoll_) {
    init_error_ = SysError("eventfd/epoll_create1").message;
    return;
  }
  struct epoll_event event = {};
  event.events = EPOLLIN;
  event.data.fd = wake_.get();
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &event) != 0) {
    init_error_ = SysError("epoll_ctl").message;
    return;
  }
  thread_ = std::thread([this] { Loop(); });
}

Spawner::~Spawner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  if (wake_) {
    uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  // Requests that never ran get an answer.
  std::lock_guard<std::mutex> lock(mutex_);
  for (Request* request : queue_) {
    request->result = Fail(ErrorCode::kSandboxUnavailable, "spawner stopped");
    request->done = true;
  }
  queue_.clear();
  done_.notify_all();
}

Result<SpawnedChild> Spawner::Spawn(const ChildPlan& plan, int cgroup_fd,
                                    std::vector<Fd>& child_fds, uid_t namespace_owner) {
  if (!init_error_.empty()) return Fail(ErrorCode::kSandboxUnavailable, "{}", init_error_);
  Request request;
  request.plan = &plan;
  request.cgroup_fd = cgroup_fd;
  request.child_fds = &child_fds;
  request.namespace_owner = namespace_owner;
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) return Fail(ErrorCode::kSandboxUnavailable, "spawner stopped");
  queue_.push_back(&request);
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  done_.wait(lock, [&] { return request.done; });
  return std::move(request.result);
}

void Spawner::DrainLog(Fd pipe, std::string label) {
  if (!init_error_.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  pending_logs_.push_back(LogSource{std::move(pipe), std::move(label), {}, 0});
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

void Spawner::Loop() {
  struct epoll_event events[16];
  for (;;) {
    int n = ::epoll_wait(epoll_.get(), events, 16, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("spawner: epoll_wait: {}", ErrnoName(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd != wake_.get()) ReadLog(events[i].data.fd);
    }
    uint64_t count = 0;
    (void)!::read(wake_.get(), &count, sizeof count);
    std::vector<LogSource> new_logs;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      new_logs.swap(pending_logs_);
    }
    for (LogSource& source : new_logs) {
      int fd = source.pipe.get();
      struct epoll_event event = {};
      event.events = EPOLLIN;
      event.data.fd = fd;
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) == 0) {
        logs_.emplace(fd, std::move(source));
      }
    }
    for (;;) {
      Request* request = nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
        if (queue_.empty()) break;
        request = queue_.front();
        queue_.pop_front();
      }
      Clone(*request);
      std::lock_guard<std::mutex> lock(mutex_);
      request->done = true;
      done_.notify_all();
    }
  }
}

namespace {

// The user namespace's owner is the euid of the process that creates it (create_user_ns), and
// the kernel charges everything counted inside the namespace (ucounts: inotify, queued signals,
// mqueue bytes, nested namespaces, RLIMIT_NPROC) to (parent namespace, owner) as well. A root
// server must not be that owner, or every sandbox spends root's host-wide budget.
//
// Why this way: the spawner thread itself takes the owner as its euid around the clone, with
// the raw setresuid syscall, which changes the calling thread's credentials only (glibc's
// wrapper would broadcast the change to every server thread). The real and saved uids stay 0,
// so the change is reversible, nothing running as the owner may signal or ptrace this thread
// meanwhile (both check the real/saved uid), and the child still runs as real uid 0 until its
// own setresuid (RLIMIT_NPROC exempts it, as before). The fs uid goes back to 0 at once, so
// path lookups and the cgroup.procs permission check of CLONE_INTO_CGROUP are root's, as
// before: the child's mount steps see the store and the agent dir as they did (they run with
// fs uid 0 until the plan's SetFsIds step). An intermediate child that drops to the uid would
// cost a fork per sandbox and need a second reparenting step for PDEATHSIG.
// A euid change clears the process's dumpable flag (commit_creds), which would make the
// server's /proc files root-owned and undumpable: it is put back, for the clone too (the child
// inherits it until its execve resets it).
class NamespaceOwner {
 public:
  explicit NamespaceOwner(uid_t owner) {
    if (owner == static_cast<uid_t>(-1) || owner == ::geteuid()) return;
    dumpable_ = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (::syscall(SYS_setresuid, -1, owner, -1) != 0) {
      error_ = errno;
      return;
    }
    switched_ = true;
    ::syscall(SYS_setfsuid, 0);
    if (dumpable_ > 0) (void)::prctl(PR_SET_DUMPABLE, dumpable_, 0, 0, 0);
  }
  ~NamespaceOwner() { Restore(); }
  void Restore() {
    if (!switched_) return;
    switched_ = false;
    // Cannot fail: the real and saved uids are still 0.
    (void)::syscall(SYS_setresuid, -1, 0, -1);
    if (dumpable_ > 0) (void)::prctl(PR_SET_DUMPABLE, dumpable_, 0, 0, 0);
  }
  NamespaceOwner(const NamespaceOwner&) = delete;
  NamespaceOwner& operator=(const NamespaceOwner&) = delete;
  int error() const { return error_; }

 private:
  bool switched_ = false;
  int dumpable_ = -1;
  int error_ = 0;
};

}  // namespace

void Spawner::Clone(Request& request) {
  const ChildPlan& plan = *request.plan;
  NamespaceOwner owner(request.namespace_owner);
  if (owner.error() != 0) {
    for (Fd& fd : *request.child_fds) fd.Reset();
    request.result = FailSys("setresuid", "the user namespace's owner", owner.error());
    return;
  }
  int pidfd = -1;
  CloneArgs args = {};
  args.flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (request.cgroup_fd >= 0) {
    args.flags |= kCloneIntoCgroup;
    args.cgroup = static_cast<uint64_t>(request.cgroup_fd);
  }
  bool in_cgroup = request.cgroup_fd >= 0;
  // Like fork(2): no stack given, the child runs on a copy of this thread's stack.
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) RunChild(plan);
  if (pid < 0 && (errno == ENOSYS || errno == E2BIG ||
                  (in_cgroup && (errno == EINVAL || errno == EACCES || errno == EPERM)))) {
    // clone3 missing (< 5.3), or refused by a seccomp filter (Docker's answers ENOSYS), or no
    // CLONE_INTO_CGROUP (< 5.7), or the cgroup's permission check refused the namespace
    // owner's credentials: the caller joins the cgroup before the go byte instead (as root).
    in_cgroup = false;
    pid = ::syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr,
                    nullptr);
    if (pid == 0) RunChild(plan);
    if (pid > 0) pidfd = PidfdOpen(static_cast<pid_t>(pid));
  }
  int clone_errno = errno;
  owner.Restore();
  for (Fd& fd : *request.child_fds) fd.Reset();
  if (pid < 0) {
    request.result = FailSys("clone", "new user+pid namespaces", clone_errno);
    return;
  }
  SpawnedChild child;
  child.pid = static_cast<pid_t>(pid);
  child.pidfd.Reset(pidfd);
  child.in_cgroup = in_cgroup;
  if (!child.pidfd) {
    // Without a pidfd we cannot kill it safely later: kill it now (it is our unreaped
    // child, so the pid is still its own).
    int err = errno;
    ::kill(child.pid, SIGKILL);
    (void)::waitpid(child.pid, nullptr, 0);
    request.result = FailSys("pidfd_open", std::to_string(child.pid), err);
    return;
  }
  request.result = std::move(child);
}

void Spawner::ReadLog(int fd) {
  auto it = logs_.find(fd);
  if (it == logs_.end()) return;
  LogSource& source = it->second;
  // Logs one line (or piece of an endless one) until the cap, then says so once.
  auto emit = [&source](std::string_view text) {
    if (source.logged >= kMaxLoggedBytesPerPipe) return;
    source.logged += text.size() + 1;
    spdlog::debug("[{}] {}", source.label, text);
    if (source.logged >= kMaxLoggedBytesPerPipe) {
      spdlog::debug("[{}] (further output not logged)", source.label);
    }
  };
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    if (!source.partial.empty()) emit(source.partial);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    logs_.erase(it);
    return;
  }
  if (source.logged >= kMaxLoggedBytesPerPipe) return;  // keep draining, stop logging
  source.partial.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = source.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    emit(std::string_view(source.partial).substr(start, nl - start));
  }
  source.partial.erase(0, start);
  if (source.partial.size() > sizeof buf) {  // a line without end: log it in pieces
    emit(source.partial);
    source.partial.clear();
  }
}

Status CompleteChildSetup(const ChildPlan& plan, int sync_fd,
                          const std::function<Status()>& map_ids,
                          const std::function<Status()>& join_cgroup, Clock::time_point deadline) {
  // A child that failed has sent its report and exited: the send then fails (EPIPE) and the
  // report waits in the socket, so the first send error means "read the report".
  auto send_go = [sync_fd]() {
    char go = 'g';
    return ::send(sync_fd, &go, 1, MSG_NOSIGNAL) == 1;
  };
  bool child_gone = false;
  if (map_ids) SBX_TRY(map_ids());
  child_gone = !send_go();
  if (!child_gone && join_cgroup) SBX_TRY(join_cgroup());
  child_gone = child_gone || !send_go();
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Fail(ErrorCode::kSandboxUnavailable, "sandbox setup did not finish in time");
    }
    struct pollfd pfd = {sync_fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return FailSys("poll", "sync socket");
    }
    if (ready == 0) continue;
    ChildFailure failure;
    ssize_t n = ::recv(sync_fd, &failure, sizeof failure, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // The child exited with our go byte unread (unix(7) reports that as ECONNRESET, once,
      // before the data still queued for us): its report, if any, comes on the next recv.
      if (errno == ECONNRESET) {
        child_gone = true;
        continue;
      }
      return FailSys("recv", "sync socket");
    }
    if (n == 0) {
      // execve closed the child's end; unless it was gone before it took its go bytes.
      if (!child_gone) return {};
      return Fail(ErrorCode::kSandboxUnavailable, "the sandbox child exited during setup");
    }
    if (static_cast<size_t>(n) != sizeof failure) {
      return Fail(ErrorCode::kSandboxUnavailable, "sandbox child sent a malformed report");
    }
    Error error =
        MakeError(ErrorCode::kSandboxUnavailable, "{}", DescribeChildFailure(plan, failure));
    error.sys_errno = failure.err;
    return Fail(std::move(error));
  }
}

}  // namespace sandbox::ns
