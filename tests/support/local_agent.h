// LocalAgent: runs sandbox-init directly on the host — no namespaces, or only a new pid
// namespace — over a socketpair, with data and tmp dirs of the caller's choosing. For the
// agent's tests and its benchmark; the backends' own suites cover real sandboxes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/agent/host/agent_client.h"
#include "runtime/agent/host/fd_byte_stream.h"
#include "runtime/base/result.h"

namespace sandbox::testing {

struct LocalAgentOptions {
  std::string data_dir;
  std::string tmp_dir;
  std::string python = "/usr/bin/python3";  // Debian's, with python3-matplotlib/pandas
  int grace_ms = 1000;
  // Run init as pid 1 of a new pid namespace (needs CAP_SYS_ADMIN).
  bool new_pid_namespace = false;
  // Show data_dir at /mnt/data and tmp_dir at /tmp, as a sandbox has them, so the layers above
  // can use the sandbox's own paths: a user and a mount namespace of init's own (unprivileged
  // user namespaces; no root). The rest of the host stays visible.
  bool sandbox_paths = false;
  // More of init's environment, KEY=VALUE: what a backend passes from the sandbox's spec
  // (SANDBOX_AGENT_PRELOAD, say).
  std::vector<std::string> env;
};

class LocalAgent {
 public:
  // Starts init and waits for its hello.
  static Result<std::unique_ptr<LocalAgent>> Start(const LocalAgentOptions& options);
  // Starts init without waiting for anything (to test failures to start).
  static Result<std::unique_ptr<LocalAgent>> Spawn(const LocalAgentOptions& options);
  ~LocalAgent();  // shuts init down, or kills it

  AgentClient& client() { return *client_; }
  FdByteStream& stream() { return *stream_; }
  pid_t pid() const { return pid_; }  // host pid of sandbox-init
  // Waits for init to exit; returns its wait status, or -1 after `timeout`.
  int WaitExit(std::chrono::milliseconds timeout);

 private:
  LocalAgent() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::unique_ptr<FdByteStream> stream_;
  std::unique_ptr<AgentClient> client_;
};

// The sandbox-init built with these tests.
std::string SandboxInitPath();
// True when `python` can import `module` (e.g. matplotlib, missing on a bare host).
bool PythonHasModule(const std::string& python, const std::string& module);
// The process state letter from /proc/<pid>/stat ('R', 'S', 'Z', ...), or 0 when it is gone.
char ProcessState(pid_t pid);
// The host pids of `pid`'s children (/proc/<pid>/task/<pid>/children).
std::vector<pid_t> ChildrenOf(pid_t pid);

}  // namespace sandbox::testing
