// The egress wiring of a session (session_egress.h, sandbox_starter.h, the manager's policy
// check) in the [unit] tier: who gets egress, what a sandbox's spec carries for each transport
// (the channel, the socket, PIP_INDEX_URL), the bytes file for the CLI, the hand-over once the
// sandbox is up, what status reports, and a backend that carries no egress dropping the policy.
// No network: the proxy is the real one, but nothing is sent through it (the proxy's own tests,
// tests/runtime/egress/, do that against loopback servers).
#include "runtime/session/session_egress.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/base/fd.h"
#include "runtime/session/egress_bytes_file.h"
#include "runtime/session/egress_socket.h"
#include "runtime/session/sandbox_starter.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_parts.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox {
namespace {

egress::EgressConfig AllowExample() {
  egress::EgressConfig config;
  auto allow = egress::Allowlist::Parse("example.org");
  REQUIRE(allow);
  config.allow = *allow;
  config.index_url = "https://example.org/simple/";
  return config;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool HasEnv(const SandboxSpec& spec, const std::string& entry) {
  return std::find(spec.env.begin(), spec.env.end(), entry) != spec.env.end();
}

// HostBackend taking the egress channel the way `transport` says: its sandboxes (sandbox-init
// on the host, no namespaces) never use it, so what is checked is what the session side wires,
// up to the hand-over. A stand-in for the transport only: the namespace and Docker backends'
// tests carry real traffic (tests/runtime/behaviour/egress_test.cc).
class EgressHostBackend : public testing::HostBackend {
 public:
  explicit EgressHostBackend(EgressTransport transport) : transport_(transport) {}
  EgressTransport egress_transport() const override { return transport_; }

 private:
  EgressTransport transport_;
};

// The parts of a server that allows example.org, over EgressHostBackend (`transport`).
testing::SessionParts EgressParts(EgressTransport transport) {
  return testing::SessionParts(
      testing::Hibernation::kOff, [](SessionConfig& config) { config.egress = AllowExample(); },
      std::make_unique<EgressHostBackend>(transport));
}

// A session's egress to example.org as `transport` carries it, its files in `state_dir`.
Result<std::unique_ptr<SessionEgress>> StartEgress(EgressTransport transport, const std::string& id,
                                                   const std::string& state_dir,
                                                   SandboxSpec& spec) {
  return SessionEgress::Start(AllowExample(), id, transport, EgressSocketDir(state_dir),
                              EgressBytesDir(state_dir), spec);
}

TEST_CASE("session egress: a session narrows the server's policy, never widens it", "[unit]") {
  egress::EgressConfig off;
  CHECK(SessionWantsEgress(off, std::nullopt) == false);
  CHECK(SessionWantsEgress(off, false) == false);
  auto widened = SessionWantsEgress(off, true);
  REQUIRE_FALSE(widened);
  CHECK(widened.error().code == ErrorCode::kInvalidArgument);
  CHECK(widened.error().message.find("SANDBOX_EGRESS_ALLOW") != std::string::npos);

  egress::EgressConfig on = AllowExample();
  CHECK(SessionWantsEgress(on, std::nullopt) == true);
  CHECK(SessionWantsEgress(on, true) == true);
  CHECK(SessionWantsEgress(on, false) == false);
}

TEST_CASE("session egress: a channel fd goes into the spec, and is the server's no more once up",
          "[unit]") {
  testing::TempDir state;
  const std::string id = NewSessionId("");
  SandboxSpec spec;
  auto egress = StartEgress(EgressTransport::kChannelFd, id, state.path(), spec);
  REQUIRE(egress);
  REQUIRE(spec.egress_channel_fd >= 0);
  CHECK(spec.egress_socket_path.empty());
  CHECK(HasEnv(spec, "PIP_INDEX_URL=https://example.org/simple/"));
  // The sandbox's end: a seqpacket socket whose peer the proxy holds.
  int type = 0;
  socklen_t size = sizeof type;
  REQUIRE(::getsockopt(spec.egress_channel_fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0);
  CHECK(type == SOCK_SEQPACKET);
  // The bytes carried, published for `sessions ls` and `top` from the start.
  CHECK(ReadEgressBytes(EgressBytesDir(state.path()), id) == uint64_t{0});

  // The backend passed it down: the server's copy of the sandbox's end is closed.
  const int borrowed = spec.egress_channel_fd;
  struct stat before {};
  REQUIRE(::fstat(borrowed, &before) == 0);
  REQUIRE((*egress)->SandboxReady());
  struct stat after {};
  CHECK((::fstat(borrowed, &after) != 0 || after.st_ino != before.st_ino));
  CHECK((*egress)->Usage().bytes == 0);

  EgressInfo info = DescribeEgress(AllowExample(), egress->get());
  CHECK(info.enabled);
  CHECK(info.allow == std::vector<std::string>{"example.org"});
  CHECK(info.index_url == "https://example.org/simple/");
  (*egress)->Shutdown();
}

TEST_CASE("session egress: a socket path goes into the spec, accepted once and removed", "[unit]") {
  testing::TempDir state;
  const std::string id = NewSessionId("");
  SandboxSpec spec;
  auto egress = StartEgress(EgressTransport::kSocketPath, id, state.path(), spec);
  REQUIRE(egress);
  CHECK(spec.egress_channel_fd == -1);
  REQUIRE_FALSE(spec.egress_socket_path.empty());
  CHECK(spec.egress_socket_path.rfind(EgressSocketDir(state.path()) + "/", 0) == 0);
  CHECK(Exists(spec.egress_socket_path));
  // sandbox-init connects before its hello; the test does, as it would.
  Fd init(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  struct sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  REQUIRE(spec.egress_socket_path.size() < sizeof address.sun_path);
  std::copy(spec.egress_socket_path.begin(), spec.egress_socket_path.end(), address.sun_path);
  REQUIRE(::connect(init.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE((*egress)->SandboxReady());
  CHECK_FALSE(Exists(spec.egress_socket_path));  // one connection, then nobody else's
  (*egress)->Shutdown();
}

TEST_CASE("session egress: a backend without a transport gets no egress channel", "[unit]") {
  testing::TempDir state;
  SandboxSpec spec;
  auto egress = StartEgress(EgressTransport::kNone, NewSessionId(""), state.path(), spec);
  REQUIRE_FALSE(egress);
  CHECK(egress.error().code == ErrorCode::kInternal);
  CHECK(spec.egress_channel_fd == -1);
  CHECK(spec.egress_socket_path.empty());
}

TEST_CASE("session egress: a sealed session reports the policy off, with the server's byte cap",
          "[unit]") {
  egress::EgressConfig config = AllowExample();
  config.limits.max_bytes = 12345;
  EgressInfo sealed = DescribeEgress(config, nullptr);
  CHECK_FALSE(sealed.enabled);
  CHECK(sealed.allow.empty());
  CHECK(sealed.max_bytes == 12345);
}

TEST_CASE("session egress: the starter wires the channel into the sandbox it starts", "[unit]") {
  testing::SessionParts parts = EgressParts(EgressTransport::kChannelFd);
  auto image = parts.starter.Resolve("host");
  REQUIRE(image);
  const std::string id = NewSessionId("");
  const Limits& limits = parts.config.limits;

  auto sealed = parts.starter.Start(NewSessionId(""), *image, limits, false, /*egress=*/false);
  REQUIRE(sealed);
  CHECK(sealed->egress == nullptr);
  const SandboxSpec& sealed_spec = parts.backend.started().at(0)->spec;
  CHECK(sealed_spec.egress_channel_fd == -1);
  CHECK_FALSE(HasEnv(sealed_spec, "PIP_INDEX_URL=https://example.org/simple/"));

  auto open = parts.starter.Start(id, *image, limits, false, /*egress=*/true);
  REQUIRE(open);
  REQUIRE(open->egress != nullptr);
  const SandboxSpec& spec = parts.backend.started().at(1)->spec;
  CHECK(spec.egress_channel_fd >= 0);
  CHECK(HasEnv(spec, "PIP_INDEX_URL=https://example.org/simple/"));
  CHECK(ReadEgressBytes(EgressBytesDir(parts.state.path()), id) == uint64_t{0});
  CHECK(DescribeEgress(parts.config.egress, open->egress.get()).enabled);
  open->egress->Shutdown();
}

TEST_CASE("session egress: a sandbox that never takes its socket fails to start, leaving none",
          "[unit]") {
  // Its sandbox-init never connects (HostBackend binds nothing in): the hand-over times out.
  testing::SessionParts parts = EgressParts(EgressTransport::kSocketPath);
  auto image = parts.starter.Resolve("host");
  REQUIRE(image);
  auto started =
      parts.starter.Start(NewSessionId(""), *image, parts.config.limits, false, /*egress=*/true);
  REQUIRE_FALSE(started);
  CHECK(started.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(started.error().message.find("egress channel") != std::string::npos);
  const std::string socket_path = parts.backend.started().at(0)->spec.egress_socket_path;
  REQUIRE_FALSE(socket_path.empty());
  CHECK_FALSE(Exists(socket_path));
  CHECK(parts.backend.started().at(0)->destroyed);
}

TEST_CASE("session egress: a server whose backend carries none drops the policy", "[unit]") {
  testing::TempDir state;
  SessionConfig config;
  config.default_image = "host";
  config.state_dir = state.path();
  config.egress = AllowExample();
  SessionManager manager(config, std::make_shared<testing::HostBackend>(),
                         testing::HostImageResolver());
  // Status and the tool descriptions never promise a network the sandboxes do not have.
  CHECK_FALSE(manager.config().egress.enabled());
  SessionOptions wants;
  wants.egress = true;
  auto refused = manager.Create(wants);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kInvalidArgument);
  auto created = manager.Create({});
  REQUIRE(created);
  CHECK_FALSE(created->egress.enabled);
}

}  // namespace
}  // namespace sandbox
