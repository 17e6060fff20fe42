// Small operations on file descriptors that sandbox-init and the server share: a close-on-exec
// pipe, non-blocking mode, and passing descriptors over a unix socket (SCM_RIGHTS).
#pragma once

#include <span>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

// pipe2(O_CLOEXEC) into two owners.
Status MakePipe(Fd& read_end, Fd& write_end);

Status SetNonBlocking(int fd);

// Sends one byte, `tag`, carrying `fds` (SCM_RIGHTS) over the unix socket `socket`; retries on
// EINTR, never raises SIGPIPE. The receiver gets its own copies; the caller keeps its fds.
Status SendFds(int socket, std::span<const int> fds, char tag);

}  // namespace sandbox
