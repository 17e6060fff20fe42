// Small operations on file descriptors that sandbox-init and the server share: a close-on-exec
// pipe and socket pair, non-blocking mode, and passing descriptors over a unix socket
// (SCM_RIGHTS).
#pragma once

#include <span>
#include <string_view>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

// pipe2(O_CLOEXEC) into two owners.
Status MakePipe(Fd& read_end, Fd& write_end);

// socketpair(AF_UNIX, type | SOCK_CLOEXEC) into two owners; `what` names the pair in the error
// ("socketpair(sync): EMFILE").
Status MakeSocketPair(int type, Fd& one, Fd& other, std::string_view what = {});

Status SetNonBlocking(int fd);

// Sends one byte, `tag`, carrying `fds` (SCM_RIGHTS) over the unix socket `socket`; retries on
// EINTR, never raises SIGPIPE. The receiver gets its own copies; the caller keeps its fds.
Status SendFds(int socket, std::span<const int> fds, char tag);

}  // namespace sandbox
