// Runs in: sandbox-init (inside the sandbox). Starts the processes init supervises — the Python
// worker and shell commands — each in its own process group, with stdout and stderr on pipes that
// init reads, and optionally the worker's framed control channel on fds 3 (in) and 4 (out).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::agent {

// The fds the worker finds its control channel on (see worker.py).
inline constexpr int kWorkerControlInFd = 3;
inline constexpr int kWorkerControlOutFd = 4;

struct ChildSpec {
  std::string executable;         // absolute path
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // KEY=VALUE
  std::string cwd;
  bool control_channel = false;  // give the child fds 3 and 4
  // Placed at the child's fd 3 instead of a control channel (the preload zygote's socket); -1
  // for none. The caller keeps its copy.
  int fd3 = -1;
};

struct ChildProcess {
  pid_t pid = -1;    // also its process group id
  Fd stdout_read;    // non-blocking
  Fd stderr_read;    // non-blocking
  Fd control_write;  // to the child's fd 3 (blocking); invalid without a control channel
  Fd control_read;   // from the child's fd 4 (non-blocking)
};

// The child's ends of what SpawnChild and the zygote's Fork give a new child: /dev/null for
// stdin, the write ends of its stdout and stderr pipes and, with a control channel, the ends
// it finds at fds 3 and 4. The parent's ends go into the ChildProcess, non-blocking.
struct ChildEnds {
  Fd stdin_null;
  Fd stdout_write;
  Fd stderr_write;
  Fd control_in_read;    // the child's fd 3; invalid without a control channel
  Fd control_out_write;  // the child's fd 4; invalid without a control channel
};
Result<ChildEnds> MakeChildEnds(bool control_channel, ChildProcess& child);

// Forks and execs `spec`. The child gets /dev/null on stdin, default signal dispositions and an
// empty signal mask, its own process group, PDEATHSIG SIGKILL (init gone means the sandbox is
// over), and no other fds. An exec failure shows up as exit status 127 with a message on the
// child's stderr pipe.
Result<ChildProcess> SpawnChild(const ChildSpec& spec);

// Finds `name` in the colon-separated `path_list` like execvp would; names with a slash are
// taken as they are. kNotFound when nothing executable matches.
Result<std::string> FindExecutable(const std::string& name, const std::string& path_list);

}  // namespace sandbox::agent
