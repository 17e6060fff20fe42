#include "runtime/agent/init/egress_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/agent/agent_env.h"
#include "runtime/base/fd.h"
#include "runtime/base/fd_ops.h"

namespace sandbox::agent {
namespace {

constexpr const char* kFdVariable = agent_env::kEgressFd;
constexpr const char* kSocketVariable = agent_env::kEgressSocket;
constexpr const char* kConnectVariable = agent_env::kEgressConnect;
constexpr const char* kPortVariable = agent_env::kEgressPort;

// The address of the socket path in `variable`, or nullopt when it is unset.
Result<std::optional<struct sockaddr_un>> SocketPathIn(const char* variable) {
  const char* path = ::getenv(variable);
  if (path == nullptr || *path == '\0') return std::optional<struct sockaddr_un>();
  struct sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (std::strlen(path) >= sizeof address.sun_path) {
    return Fail(ErrorCode::kInvalidArgument, "{} is too long", variable);
  }
  std::strcpy(address.sun_path, path);
  return std::optional<struct sockaddr_un>(address);
}

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
  SBX_ASSIGN_OR_RETURN(auto address, SocketPathIn(kSocketVariable));
  if (!address) return Fd();
  Fd channel(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!channel) return FailSys("socket", "egress channel");
  if (::connect(channel.get(), reinterpret_cast<struct sockaddr*>(&*address), sizeof *address) !=
      0) {
    return FailSys("connect", address->sun_path);
  }
  return channel;
}

bool AcceptFailureIsPassing(int error) {
  return error == EINTR || error == ECONNABORTED || error == EMFILE || error == ENFILE ||
         error == ENOBUFS || error == ENOMEM;
}

// Passes `client` over the channel; false when the server is gone.
bool PassSocket(int channel, int client) {
  return SendFds(channel, std::span<const int>(&client, 1), 'c').has_value();
}

[[noreturn]] void RelayLoop(int listener, int channel) {
  for (;;) {
    int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (AcceptFailureIsPassing(errno)) continue;
      ::_exit(1);
    }
    bool passed = PassSocket(channel, client);
    ::close(client);  // the server holds it now
    if (!passed) ::_exit(0);
  }
}

// One proxied connection of CopyLoop: fds[0] the client's socket in the sandbox, fds[1] its
// connection to the host. pending[i] holds what was read from fds[i] and not yet written to
// the other. The client's end of writing is passed on as a shutdown(SHUT_WR), so a request
// that half-closes still gets its answer; the host side's end, once its bytes are delivered,
// ends the connection: the proxy closes what it refuses while the client may hold its socket
// open, and holding both descriptors until then would let a flood run the relay out of them.
struct CopiedConnection {
  int fds[2] = {-1, -1};
  std::string pending[2];
  bool reading[2] = {true, true};
  bool shut[2] = {false, false};  // fds[i] was shut for writing

  CopiedConnection() = default;
  CopiedConnection(const CopiedConnection&) = delete;
  CopiedConnection& operator=(const CopiedConnection&) = delete;
  ~CopiedConnection() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  bool done() const { return (shut[0] && shut[1]) || (!reading[1] && pending[1].empty()); }
  short events(int i) const {
    short wanted = 0;
    if (reading[i] && pending[i].empty()) wanted |= POLLIN;
    if (!pending[1 - i].empty()) wanted |= POLLOUT;
    return wanted;
  }
  // Writes what fds[from] left for the other side; false when that side is gone.
  bool Flush(int from) {
    int to = fds[1 - from];
    while (!pending[from].empty()) {
      ssize_t sent = ::send(to, pending[from].data(), pending[from].size(), MSG_NOSIGNAL);
      if (sent < 0) return errno == EAGAIN || errno == EINTR;
      pending[from].erase(0, static_cast<size_t>(sent));
    }
    if (!reading[from] && !shut[1 - from]) {
      ::shutdown(to, SHUT_WR);
      shut[1 - from] = true;
    }
    return true;
  }
  // Reads what fds[from] has; false when the connection is to be dropped.
  bool Read(int from, char* buffer, size_t size) {
    ssize_t got = ::recv(fds[from], buffer, size, 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (got <= 0) {
      reading[from] = false;
    } else {
      pending[from].assign(buffer, static_cast<size_t>(got));
    }
    return Flush(from);
  }
};

// The relay for a kernel that cannot pass sockets out: one process for every connection (a
// process per connection would put a flood of them past the sandbox's task limit), each
// accepted connection joined to a new connection to `upstream` and copied both ways.
[[noreturn]] void CopyLoop(int listener, const struct sockaddr_un& upstream) {
  if (!SetNonBlocking(listener)) ::_exit(1);
  std::vector<std::unique_ptr<CopiedConnection>> connections;
  std::vector<struct pollfd> fds;
  static char buffer[64 * 1024];
  bool accepting = true;
  for (;;) {
    fds.assign(1, {accepting ? listener : -1, POLLIN, 0});
    for (const auto& c : connections) {
      for (int i = 0; i < 2; ++i) {
        short wanted = c->events(i);
        fds.push_back({wanted != 0 ? c->fds[i] : -1, wanted, 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    for (size_t k = 0; k < connections.size(); ++k) {
      CopiedConnection& c = *connections[k];
      bool alive = true;
      for (int i = 0; i < 2 && alive; ++i) {
        short got = fds[1 + 2 * k + static_cast<size_t>(i)].revents;
        if (got == 0) continue;
        if (got & POLLOUT) alive = c.Flush(1 - i);
        if (alive && (got & (POLLIN | POLLHUP | POLLERR)) && c.reading[i] && c.pending[i].empty()) {
          alive = c.Read(i, buffer, sizeof buffer);
        }
      }
      if (!alive || c.done()) connections[k].reset();
    }
    size_t before = connections.size();
    std::erase(connections, nullptr);
    if (connections.size() < before) accepting = true;
    if (fds[0].revents == 0) continue;
    int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) {
      if (!AcceptFailureIsPassing(errno)) ::_exit(1);
      // Out of descriptors or memory: wait for a connection to end before the next accept.
      if (errno != EINTR && errno != ECONNABORTED) accepting = connections.empty();
      continue;
    }
    int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (server < 0 ||
        ::connect(server, reinterpret_cast<const struct sockaddr*>(&upstream), sizeof upstream) !=
            0 ||
        !SetNonBlocking(server)) {
      // The client sees its connection closed; the next one tries again.
      if (server >= 0) ::close(server);
      ::close(client);
      continue;
    }
    auto connection = std::make_unique<CopiedConnection>();
    connection->fds[0] = client;
    connection->fds[1] = server;
    connections.push_back(std::move(connection));
  }
}

}  // namespace

bool IsEgressRelayVariable(const std::string& entry) {
  for (const char* name : {kFdVariable, kSocketVariable, kConnectVariable, kPortVariable}) {
    size_t length = std::strlen(name);
    if (entry.size() > length && entry.compare(0, length, name) == 0 && entry[length] == '=') {
      return true;
    }
  }
  return false;
}

Result<std::vector<std::string>> StartEgressRelay() {
  SBX_ASSIGN_OR_RETURN(auto upstream, SocketPathIn(kConnectVariable));
  Fd channel;
  if (!upstream) {
    SBX_ASSIGN_OR_RETURN(channel, OpenChannel());
    if (!channel) return std::vector<std::string>{};
  }
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
    if (upstream) CopyLoop(listener.get(), *upstream);
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
