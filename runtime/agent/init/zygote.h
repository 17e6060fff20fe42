// Runs in: sandbox-init (inside the sandbox). The preload zygote: a Python process that has
// imported the preload modules (numpy, pandas, ...) once, and forks a new worker with them
// already imported whenever init needs one (at a restart after a timeout kill or an OOM, for a
// `fresh` run). init talks to it over a SOCK_SEQPACKET socketpair at the zygote's fd 3: one
// packet with the worker's five fds (SCM_RIGHTS) per fork, one JSON packet back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/agent/init/child_process.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::agent {

class Zygote {
 public:
  // Starts `python -u worker_script --zygote <modules>` (modules comma-separated); returns at
  // once. The zygote says it is ready on socket_fd() when the imports are done.
  static Result<std::unique_ptr<Zygote>> Start(const ChildSpec& worker_spec,
                                               const std::string& modules);
  ~Zygote();  // kills the zygote's process group

  pid_t pid() const { return child_.pid; }
  // Readable once the zygote is ready (or dead); polled until ready().
  int socket_fd() const { return socket_.get(); }
  bool ready() const { return ready_; }

  // Reads the ready packet. Fails when the zygote died or said something else.
  Status ReadReady();
  const std::vector<std::string>& imported() const { return imported_; }
  const std::vector<std::string>& failed() const { return failed_; }

  // Forks a worker: the same as SpawnChild with a control channel, but the process comes from
  // the zygote (a grandchild of it, reparented to init). Waits at most `timeout` for the pid.
  // `warm_up`: the worker first repeats the zygote's warm-up of numpy and pandas, so the pages
  // a first DataFrame cell writes to are copied before that cell, not during it (a few MB; for
  // the worker a pooled sandbox waits with, not for restarts).
  Result<ChildProcess> Fork(std::chrono::milliseconds timeout, bool warm_up = false);

 private:
  Zygote() = default;
  Result<std::string> Receive(std::chrono::milliseconds timeout);

  ChildProcess child_;
  Fd socket_;
  bool ready_ = false;
  std::vector<std::string> imported_;
  std::vector<std::string> failed_;
};

}  // namespace sandbox::agent
