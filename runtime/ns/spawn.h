// Starting a sandbox child: the clone on a dedicated spawner thread, and the parent's side of
// the sync protocol.
//
// Why a thread: PR_SET_PDEATHSIG fires when the parent *thread* exits, and the server's
// request threads come and go. One long-lived thread per backend does every clone (and
// drains the children's stderr pipes), so a child dies with the server, never with a request.
//
// The sync protocol (as nsjail/crun), over a CLOEXEC SOCK_SEQPACKET socketpair:
//   1. the child, cloned into new user + pid namespaces, blocks reading one byte;
//   2. the parent writes its uid/gid maps, then the first go byte;
//   3. the child unshares its other namespaces and builds its mount tree while the parent
//      joins it to its cgroup (unless clone3 put it there), then reads the second go byte;
//   4. the child finishes (cgroup namespace, ids, capabilities, seccomp); a failing step sends
//      ChildFailure {step, index, errno};
//   5. a successful execve closes the child's end (CLOEXEC): EOF means success.
// The parent never waits without a deadline; on any failure the caller kills and reaps.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"
#include "runtime/byte_stream.h"
#include "runtime/ns/child_setup.h"

namespace sandbox::ns {

struct SpawnedChild {
  pid_t pid = -1;
  Fd pidfd;
  bool in_cgroup = false;  // cloned straight into the cgroup (clone3 CLONE_INTO_CGROUP)
};

class Spawner {
 public:
  Spawner();
  ~Spawner();  // stops the thread: children not yet exec'd die with it (PDEATHSIG)
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // Clones a child running RunChild(plan) in new user and pid namespaces, into the cgroup
  // `cgroup_fd` when >= 0 (clone3 CLONE_INTO_CGROUP; plain clone when clone3 is refused).
  // `child_fds` (the child's ends of its sockets and pipes) are closed in the parent right
  // after the clone, on the spawner thread, so that no later child inherits them.
  // `namespace_owner` (root server: the sandbox's host uid; -1: the server's euid) is the euid
  // the new user namespace is created with: the kernel charges every per-user counter used
  // inside it (inotify, queued signals, mqueues, ...) to (parent namespace, owner).
  Result<SpawnedChild> Spawn(const ChildPlan& plan, int cgroup_fd, std::vector<Fd>& child_fds,
                             uid_t namespace_owner = static_cast<uid_t>(-1));

  // Reads `pipe` (a child's stderr) on the spawner thread until EOF, logging each line at
  // debug level as "[label] line". Caps what it logs per pipe; it keeps draining beyond.
  void DrainLog(Fd pipe, std::string label);

 private:
  struct Request;
  struct LogSource {
    Fd pipe;
    std::string label;
    std::string partial;  // an unfinished line
    size_t logged = 0;
  };
  void Loop();
  void Clone(Request& request);
  void ReadLog(int fd);

  std::mutex mutex_;
  std::condition_variable done_;
  std::deque<Request*> queue_;           // spawns waiting for the thread
  std::vector<LogSource> pending_logs_;  // pipes to add to the epoll set
  bool stopping_ = false;
  Fd wake_;                                  // eventfd: work in the queue
  Fd epoll_;                                 // the wake eventfd and the log pipes
  std::unordered_map<int, LogSource> logs_;  // spawner thread only
  std::string init_error_;
  std::thread thread_;
};

// The parent's side of steps 2-5: `map_ids` runs while the child waits for the first byte,
// `join_cgroup` while it builds its mounts; then the second byte; then a failure report, EOF
// (success) or the deadline. The error names the child's step and errno ("mount /proc: EPERM").
Status CompleteChildSetup(const ChildPlan& plan, int sync_fd,
                          const std::function<Status()>& map_ids,
                          const std::function<Status()>& join_cgroup, Clock::time_point deadline);

}  // namespace sandbox::ns
