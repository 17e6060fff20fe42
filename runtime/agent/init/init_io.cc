#include "runtime/agent/init/init_io.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace sandbox::agent {

void Log(const std::string& message) {
  std::string line = "sandbox-init: " + message + "\n";
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

bool ReadAvailable(int fd, std::string& out, int max_reads) {
  char buf[kReadChunk];
  for (int i = 0; i < max_reads; ++i) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf) return true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
  return true;
}

// Writes all of `data`, waiting for POLLOUT when the fd is non-blocking.
bool WriteFully(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p {
        fd, POLLOUT, 0
      };
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace sandbox::agent
