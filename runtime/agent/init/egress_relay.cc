#include "runtime/agent/init/egress_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/agent/agent_env.h"
#include "runtime/base/fd.h"
#include "runtime/base/fd_ops.h"

namespace sandbox::agent {
namespace {

constexpr const char* kFdVariable = agent_env::kEgressFd;
constexpr const char* kSocketVariable = agent_env::kEgressSocket;
constexpr const char* kPortVariable = agent_env::kEgressPort;

Result<Fd> OpenChannel() {
  const char* fd_text = ::getenv(kFdVariable);
  if (fd_text != nullptr && *fd_text != '\0') {
    char* end = nullptr;
    long fd = std::strtol(fd_text, &end, 10);
    if (end == fd_text || *end != '\0' || fd < 3 || fd > 1023) {
      return Fail(ErrorCode::kInvalidArgument, "{}={} is not an fd number", kFdVariable, fd_text);
    }
    int type = 0;
    socklen_t size = sizeof type;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &size) != 0) {
      return FailSys("getsockopt", std::string(kFdVariable) + "=" + fd_text);
    }
    Fd channel(static_cast<int>(fd));
    if (::fcntl(channel.get(), F_SETFD, FD_CLOEXEC) != 0) return FailSys("fcntl", "egress fd");
    return channel;
  }
  const char* path = ::getenv(kSocketVariable);
  if (path == nullptr || *path == '\0') return Fd();
  struct sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (std::strlen(path) >= sizeof address.sun_path) {
    return Fail(ErrorCode::kInvalidArgument, "{} is too long", kSocketVariable);
  }
  std::strcpy(address.sun_path, path);
  Fd channel(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!channel) return FailSys("socket", "egress channel");
  if (::connect(channel.get(), reinterpret_cast<struct sockaddr*>(&address), sizeof address) != 0) {
    return FailSys("connect", path);
  }
  return channel;
}

// Passes `client` over the channel; false when the server is gone.
bool PassSocket(int channel, int client) {
  return SendFds(channel, std::span<const int>(&client, 1), 'c').has_value();
}

[[noreturn]] void RelayLoop(int listener, int channel) {
  for (;;) {
    int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
          errno == ENOBUFS || errno == ENOMEM) {
        continue;
      }
      ::_exit(1);
    }
    bool passed = PassSocket(channel, client);
    ::close(client);  // the server holds it now
    if (!passed) ::_exit(0);
  }
}

}  // namespace

bool IsEgressRelayVariable(const std::string& entry) {
  for (const char* name : {kFdVariable, kSocketVariable, kPortVariable}) {
    size_t length = std::strlen(name);
    if (entry.size() > length && entry.compare(0, length, name) == 0 && entry[length] == '=') {
      return true;
    }
  }
  return false;
}

Result<std::vector<std::string>> StartEgressRelay() {
  SBX_ASSIGN_OR_RETURN(Fd channel, OpenChannel());
  if (!channel) return std::vector<std::string>{};
  int port = kDefaultEgressPort;
  if (const char* text = ::getenv(kPortVariable); text != nullptr && *text != '\0') {
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < 1 || value > 65535) {
      return Fail(ErrorCode::kInvalidArgument, "{}={} is not a port", kPortVariable, text);
    }
    port = static_cast<int>(value);
  }
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) return FailSys("socket", "egress listener");
  int one = 1;
  (void)::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener.get(), reinterpret_cast<struct sockaddr*>(&address), sizeof address) != 0) {
    return FailSys("bind", "127.0.0.1:" + std::to_string(port));
  }
  if (::listen(listener.get(), 128) != 0) return FailSys("listen", "egress listener");

  pid_t pid = ::fork();
  if (pid < 0) return FailSys("fork", "egress relay");
  if (pid == 0) {
    // The relay: a child of init, reaped by it like any orphan. It keeps no protocol fd, so
    // the host sees EOF on the agent stream as soon as init itself is gone.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(0);
    ::close(1);
    RelayLoop(listener.get(), channel.get());
  }
  const std::string proxy = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> env;
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                           "all_proxy", "PIP_PROXY"}) {
    env.push_back(std::string(name) + "=" + proxy);
  }
  env.emplace_back("NO_PROXY=localhost,127.0.0.1,::1");
  env.emplace_back("no_proxy=localhost,127.0.0.1,::1");
  return env;
}

}  // namespace sandbox::agent
