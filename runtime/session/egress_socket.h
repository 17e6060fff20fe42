// The egress channel of a backend that cannot pass a file descriptor into its sandbox (Docker,
// Backend::egress_transport() == kSocketPath): a listening SOCK_SEQPACKET socket in a private
// host directory, which the backend binds into the sandbox. sandbox-init connects to it before
// its agent says hello; the server then accepts exactly that one connection and removes the
// socket, so nothing else (in the sandbox or on the host) can connect to it later.
//
// Who can reach the socket while it exists: the directory is 0700 and owned by the server's
// user, so no other host user can open a path to it; the socket file itself is 0666 because
// the sandbox's uid (1000, or what a daemon's userns-remap maps it to) is not the server's and
// reaches it only through the bind mount, which does not pass through that directory.
#pragma once

#include <chrono>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

// state_dir + "/egress": where a server's egress sockets live.
std::string EgressSocketDir(const std::string& state_dir);

class EgressSocket {
 public:
  // Listens at <dir>/<session_id>.sock; makes `dir` 0700 (and refuses one that is not ours or
  // that others can enter).
  static Result<EgressSocket> Listen(const std::string& dir, const std::string& session_id);

  EgressSocket() = default;
  EgressSocket(EgressSocket&& other) noexcept = default;
  EgressSocket& operator=(EgressSocket&& other) noexcept;
  ~EgressSocket() { Remove(); }

  // The host path to bind into the sandbox.
  const std::string& path() const { return path_; }

  // Accepts the one connection (waiting at most `wait` for it), then removes the socket file
  // and closes the listener, also when nothing connected.
  Result<Fd> AcceptOnce(std::chrono::milliseconds wait);

 private:
  void Remove();

  Fd listener_;
  std::string path_;
};

// Removes egress sockets under `dir` older than `older_than`: a socket exists only while its
// sandbox starts, so an old one is a crashed server's. Returns how many were removed.
int SweepEgressSockets(const std::string& dir, std::chrono::seconds older_than);

// The age after which SweepEgressSockets may take a socket: far above any sandbox start,
// image loading included.
inline constexpr std::chrono::seconds kStaleEgressSocketAge{3600};

}  // namespace sandbox
