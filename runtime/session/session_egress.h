// A session's network egress, between the session manager and runtime/egress: whether a
// session gets it (the server's allowlist, narrowed by the caller's `egress: false`), the
// channel and proxy that carry it, and what the session reports about it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"
#include "runtime/egress/egress_config.h"
#include "runtime/egress/egress_proxy.h"
#include "runtime/egress/egress_report.h"
#include "runtime/session/egress_bytes_file.h"
#include "runtime/session/egress_socket.h"

namespace sandbox {

// The egress policy in force for one session, as status reports it (egress_report.h).
using EgressInfo = egress::EgressInfo;

// Whether a session gets egress: on when the server has an allowlist unless the caller asks
// for false; asking for true on a server without one is kInvalidArgument (narrow, never widen).
Result<bool> SessionWantsEgress(const egress::EgressConfig& config, std::optional<bool> requested);

class SessionEgress {
 public:
  // Makes the channel the way `transport` says the backend takes it, and adds to `spec` what
  // the sandbox needs: the channel (the sandbox's end of a socket pair, or the path of a
  // listening socket made under `socket_dir`) and PIP_INDEX_URL. The bytes carried are also
  // published under `bytes_dir` for the CLI (egress_bytes_file.h). Call SandboxReady() once the
  // sandbox's agent said hello.
  static Result<std::unique_ptr<SessionEgress>> Start(
      const egress::EgressConfig& config, const std::string& session_id, EgressTransport transport,
      const std::string& socket_dir, const std::string& bytes_dir, SandboxSpec& spec);
  // The sandbox is up and sandbox-init has its channel: closes the server's copy of the
  // sandbox's end, or accepts the one connection to the socket (which init made before the
  // hello) and removes the socket. The proxy serves the channel from then on.
  Status SandboxReady();
  void Shutdown() {
    if (proxy_) proxy_->Shutdown();
  }
  egress::EgressUsage Usage() const { return proxy_ ? proxy_->Usage() : egress::EgressUsage{}; }

 private:
  uint64_t* PublishedCounter() { return published_ ? published_->counter() : nullptr; }

  std::string session_id_;
  egress::Allowlist allow_;
  egress::EgressLimits limits_;
  std::unique_ptr<EgressBytesFile> published_;  // outlives the proxy, which adds to it
  std::unique_ptr<egress::EgressProxy> proxy_;
  Fd sandbox_end_;       // kChannelFd, until SandboxReady
  EgressSocket socket_;  // kSocketPath, until SandboxReady
};

EgressInfo DescribeEgress(const egress::EgressConfig& config, const SessionEgress* egress);

}  // namespace sandbox
