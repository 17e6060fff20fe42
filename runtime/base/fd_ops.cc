#include "runtime/base/fd_ops.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sandbox {

Status MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return FailSys("pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  return {};
}

Status MakeSocketPair(int type, Fd& one, Fd& other, std::string_view what) {
  int fds[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0) return FailSys("socketpair", what);
  one.Reset(fds[0]);
  other.Reset(fds[1]);
  return {};
}

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return FailSys("fcntl(O_NONBLOCK)");
  return {};
}

Status SendFds(int socket, std::span<const int> fds, char tag) {
  struct iovec iov = {&tag, 1};
  std::vector<char> control(CMSG_SPACE(fds.size_bytes()));
  struct msghdr message = {};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  struct cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(fds.size_bytes());
  std::memcpy(CMSG_DATA(header), fds.data(), fds.size_bytes());
  for (;;) {
    if (::sendmsg(socket, &message, MSG_NOSIGNAL) == 1) return {};
    if (errno != EINTR) return FailSys("sendmsg");
  }
}

}  // namespace sandbox
