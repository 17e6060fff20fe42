// The host side of a gVisor sandbox's network egress. The Sentry cannot hand its own sockets to
// the host (SCM_RIGHTS of a Sentry socket over a host socket fails with EINVAL), so the relay of
// the other backends, which passes each proxy connection out whole, cannot work there. Instead
// sandbox-init connects to a stream socket in a directory bound into the sandbox once per
// proxy connection and copies the bytes (runtime/agent/init/egress_relay.h); runsc lets it
// reach the host socket (--host-uds=open: the Gofer connects and hands the Sentry the fd). This
// bridge accepts those connections and hands each one to the egress proxy over the session's
// channel, as the in-sandbox relay does on the namespace backend: the proxy is unchanged.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::gvisor {

// The socket's name in the bridge's directory.
inline constexpr char kEgressSocketName[] = "proxy.sock";

class EgressBridge {
 public:
  // Makes `dir` (0711: the sandbox user only passes through it) and listens there at
  // kEgressSocketName (0666: the bind mount is the only way to it, since dir's parent is a
  // 0700 bundle directory), then serves `channel` (borrowed: the bridge keeps a duplicate).
  static Result<std::unique_ptr<EgressBridge>> Start(const std::string& dir, int channel);
  // Stops accepting and closes the listener and the channel; connections already handed over
  // are the proxy's.
  ~EgressBridge();

  EgressBridge(const EgressBridge&) = delete;
  EgressBridge& operator=(const EgressBridge&) = delete;

 private:
  EgressBridge() = default;
  void Serve();

  Fd listener_;
  Fd channel_;
  Fd stop_read_, stop_write_;
  std::thread thread_;
};

}  // namespace sandbox::gvisor
