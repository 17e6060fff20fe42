// Runs in: sandbox-init, before the agent starts. The sandbox's end of network egress
// (runtime/egress/egress_proxy.h is the server's): when the backend gives init an egress
// channel, init listens on the proxy address on the sandbox's own loopback and forks a relay
// that hands every accepted connection, the socket itself, to the server over the channel
// (SCM_RIGHTS). The relay never reads a byte of the traffic and resolves nothing: the server
// parses the proxy request, judges it and dials; the sandbox keeps only loopback.
//
// A kernel that cannot pass its sockets to the host (gVisor's Sentry: its loopback sockets are
// its own, and SCM_RIGHTS over a host socket fails with EINVAL) gets a stream socket path
// instead: the relay connects to it once per accepted connection and copies the bytes both
// ways; the host side hands each connection it accepts to the server as a client.
//
// Environment (set by the backend):
//   SANDBOX_AGENT_EGRESS_FD      an inherited SOCK_SEQPACKET socket (namespace backend), or
//   SANDBOX_AGENT_EGRESS_SOCKET  the path of one to connect to (Docker backend's bind mount), or
//   SANDBOX_AGENT_EGRESS_CONNECT the path of a SOCK_STREAM socket to connect to per connection
//                                (gVisor backend's bind mount)
//   SANDBOX_AGENT_EGRESS_PORT    the loopback port to listen on (default 3128)
#pragma once

#include <string>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::agent {

inline constexpr int kDefaultEgressPort = 3128;

// Starts the relay when the environment names a channel. Returns the proxy variables for the
// worker and shell commands (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, PIP_PROXY, NO_PROXY and the
// lower-case forms), or nothing when there is no channel (egress off: no variables, so tools
// fail at once instead of waiting on a proxy that is not there).
Result<std::vector<std::string>> StartEgressRelay();

// Whether `entry` ("NAME=value") is one of the variables above that only init reads.
bool IsEgressRelayVariable(const std::string& entry);

}  // namespace sandbox::agent
