#include "runtime/gvisor/egress_bridge.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/base/fd_ops.h"

namespace sandbox::gvisor {

Result<std::unique_ptr<EgressBridge>> EgressBridge::Start(const std::string& dir, int channel) {
  if (::mkdir(dir.c_str(), 0711) != 0) return FailSys("mkdir", dir);
  // mkdir's mode is masked by the umask.
  if (::chmod(dir.c_str(), 0711) != 0) return FailSys("chmod", dir);
  Fd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return FailSys("open", dir);
  std::unique_ptr<EgressBridge> bridge(new EgressBridge());
  bridge->channel_ = Fd(::fcntl(channel, F_DUPFD_CLOEXEC, 3));
  if (!bridge->channel_) return FailSys("fcntl", "egress channel");
  bridge->listener_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!bridge->listener_) return FailSys("socket", "egress bridge");
  // Bound through the directory's fd: a bundle path with a long session id would not fit in
  // sun_path.
  struct sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  const std::string path = fmt::format("/proc/self/fd/{}/{}", dir_fd.get(), kEgressSocketName);
  std::strcpy(address.sun_path, path.c_str());
  if (::bind(bridge->listener_.get(), reinterpret_cast<struct sockaddr*>(&address),
             sizeof address) != 0) {
    return FailSys("bind", dir + "/" + kEgressSocketName);
  }
  if (::fchmodat(dir_fd.get(), kEgressSocketName, 0666, 0) != 0) {
    return FailSys("chmod", dir + "/" + kEgressSocketName);
  }
  if (::listen(bridge->listener_.get(), 128) != 0) return FailSys("listen", "egress bridge");
  SBX_TRY(MakePipe(bridge->stop_read_, bridge->stop_write_));
  bridge->thread_ = std::thread([raw = bridge.get()] { raw->Serve(); });
  return bridge;
}

EgressBridge::~EgressBridge() {
  if (thread_.joinable()) {
    stop_write_.Reset();  // the thread sees the pipe's end
    thread_.join();
  }
}

void EgressBridge::Serve() {
  struct pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("egress bridge: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    Fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) continue;  // EAGAIN after a connection given up, or a passing shortage
    // The proxy takes the connection as a client of its own; a send that fails means the
    // session's proxy is gone, and with it the egress of this sandbox.
    const int fd = client.get();
    if (!SendFds(channel_.get(), std::span<const int>(&fd, 1), 'c')) {
      // Later connects are refused (ECONNREFUSED) instead of waiting on a backlog no one takes.
      ::shutdown(listener_.get(), SHUT_RDWR);
      return;
    }
  }
}

}  // namespace sandbox::gvisor
