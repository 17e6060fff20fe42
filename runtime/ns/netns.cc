#include "runtime/ns/netns.h"

#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sandbox::ns {

int BringUpLoopback() {
  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return errno;
  struct ifreq request = {};
  // "lo" fits IFNAMSIZ; a literal copy avoids strncpy's truncation warning.
  request.ifr_name[0] = 'l';
  request.ifr_name[1] = 'o';
  int err = 0;
  if (::ioctl(sock, SIOCGIFFLAGS, &request) != 0) {
    err = errno;
  } else {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::ioctl(sock, SIOCSIFFLAGS, &request) != 0) err = errno;
  }
  ::close(sock);
  return err;
}

}  // namespace sandbox::ns
