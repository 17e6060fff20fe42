#include "runtime/session/session_egress.h"

#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include "runtime/base/fd_ops.h"

namespace sandbox {
namespace {
constexpr std::chrono::milliseconds kEgressConnectWait{2000};
}  // namespace

Result<bool> SessionWantsEgress(const egress::EgressConfig& config, std::optional<bool> requested) {
  if (requested.value_or(config.enabled()) && !config.enabled()) {
    return Fail(ErrorCode::kInvalidArgument,
                "egress: true, but this server allows no network egress (SANDBOX_EGRESS_ALLOW "
                "is not set); a session can only narrow the server's policy");
  }
  return requested.value_or(config.enabled());
}

Result<std::unique_ptr<SessionEgress>> SessionEgress::Start(
    const egress::EgressConfig& config, const std::string& session_id, EgressTransport transport,
    const std::string& socket_dir, const std::string& bytes_dir, SandboxSpec& spec) {
  auto egress = std::make_unique<SessionEgress>();
  egress->session_id_ = session_id;
  egress->allow_ = config.allow;
  egress->limits_ = config.limits;
  // Without it the session still has egress; only `sessions ls` and `top` show no bytes.
  if (auto published = EgressBytesFile::Create(bytes_dir, session_id); published) {
    egress->published_ = std::move(*published);
  } else {
    spdlog::warn("session {}: egress bytes not published: {}", session_id,
                 published.error().message);
  }
  switch (transport) {
    case EgressTransport::kChannelFd: {
      Fd server_end;
      SBX_TRY(MakeSocketPair(SOCK_SEQPACKET, server_end, egress->sandbox_end_, "egress channel"));
      SBX_ASSIGN_OR_RETURN(egress->proxy_, egress::EgressProxy::Start(
                                               session_id, config.allow, config.limits,
                                               std::move(server_end), egress->PublishedCounter()));
      spec.egress_channel_fd = egress->sandbox_end_.get();
      break;
    }
    case EgressTransport::kSocketPath: {
      SBX_ASSIGN_OR_RETURN(egress->socket_, EgressSocket::Listen(socket_dir, session_id));
      spec.egress_socket_path = egress->socket_.path();
      break;
    }
    case EgressTransport::kNone:
      return Fail(ErrorCode::kInternal, "this backend carries no network egress");
  }
  if (!config.index_url.empty()) spec.env.push_back("PIP_INDEX_URL=" + config.index_url);
  return egress;
}

Status SessionEgress::SandboxReady() {
  sandbox_end_.Reset();
  if (proxy_) return {};
  // Init connected before its hello, so the connection is already queued: the wait only
  // bounds a sandbox that failed in between.
  SBX_ASSIGN_OR_RETURN(Fd channel, socket_.AcceptOnce(kEgressConnectWait));
  SBX_ASSIGN_OR_RETURN(proxy_, egress::EgressProxy::Start(session_id_, std::move(allow_), limits_,
                                                          std::move(channel), PublishedCounter()));
  return {};
}

EgressInfo DescribeEgress(const egress::EgressConfig& config, const SessionEgress* egress) {
  // A session without a proxy was sealed (egress=false) or its server has no allowlist.
  if (egress == nullptr) {
    EgressInfo sealed;
    sealed.max_bytes = config.limits.max_bytes;
    return sealed;
  }
  EgressInfo info = egress::DescribePolicy(config);
  info.usage = egress->Usage();
  return info;
}

}  // namespace sandbox
