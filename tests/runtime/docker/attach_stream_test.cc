// AttachStream and the hijack handshake over real sockets, with the peer played by the test:
// frame splits, agent logs, daemon errors, bytes that arrive with the response head, and error
// replies are faults a real daemon does not produce on demand.
#include "runtime/docker/attach_stream.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/base/fd.h"
#include "runtime/docker/docker_backend.h"
#include "runtime/docker/hijacked_connection.h"
#include "tests/support/test_support.h"

namespace attach_stream_test {

using namespace sandbox;
using namespace sandbox::docker;
using namespace std::chrono_literals;

namespace {

std::string Frame(uint8_t stream, const std::string& payload) {
  std::string frame = {static_cast<char>(stream), 0, 0, 0};
  uint32_t size = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(size >> shift));
  return frame + payload;
}

struct Pair {
  Pair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    ours.Reset(fds[0]);
    peer.Reset(fds[1]);
  }
  // Safe off the test's thread (no Catch2 assertion).
  bool TrySend(std::string_view data) {
    return ::send(peer.get(), data.data(), data.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(data.size());
  }
  void Send(std::string_view data) { REQUIRE(TrySend(data)); }
  Fd ours, peer;
};

Result<std::string> ReadN(ByteStream& stream, size_t n, std::chrono::milliseconds timeout = 5s) {
  std::string out;
  char buf[7];  // small on purpose: reads smaller than frames
  auto deadline = Clock::now() + timeout;
  while (out.size() < n) {
    auto got = stream.Read(buf, std::min(sizeof buf, n - out.size()), deadline);
    if (!got) return tl::unexpected(got.error());
    if (*got == 0) break;
    out.append(buf, *got);
  }
  return out;
}

}  // namespace

TEST_CASE("attach stream: protocol bytes out of frames split anywhere", "[unit]") {
  Pair pair;
  std::string early = Frame(1, "hel");
  std::string rest = Frame(2, "log line\n") + Frame(1, "lo\n") + Frame(1, "world\n");
  AttachStream stream(HijackedConnection{std::move(pair.ours), early.substr(0, 5)}, "t");
  std::string all = early.substr(5) + rest;
  bool all_sent = true;  // checked on this thread after the join
  std::thread writer([&] {
    for (char c : all) {
      all_sent = pair.TrySend(std::string_view(&c, 1)) && all_sent;
      std::this_thread::sleep_for(100us);
    }
  });
  auto got = ReadN(stream, 12);
  writer.join();
  CHECK(all_sent);
  REQUIRE(got);
  CHECK(*got == "hello\nworld\n");
}

TEST_CASE("attach stream: writes reach the peer, CloseWrite gives it EOF", "[unit]") {
  Pair pair;
  AttachStream stream(HijackedConnection{std::move(pair.ours), ""}, "t");
  REQUIRE(stream.Write("request\n"));
  stream.CloseWrite();
  std::string received;
  char buf[64];
  ssize_t n;
  while ((n = ::read(pair.peer.get(), buf, sizeof buf)) > 0) received.append(buf, n);
  CHECK(n == 0);
  CHECK(received == "request\n");
}

TEST_CASE("attach stream: a daemon error is an error after the bytes before it", "[unit]") {
  Pair pair;
  AttachStream stream(HijackedConnection{std::move(pair.ours), ""}, "t");
  pair.Send(Frame(1, "partial") + Frame(3, "error from daemon: container died"));
  auto first = ReadN(stream, 7);
  REQUIRE(first);
  CHECK(*first == "partial");
  char buf[8];
  auto error = stream.Read(buf, sizeof buf, Clock::now() + 5s);
  REQUIRE_FALSE(error);
  CHECK(error.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(error.error().message, Catch::Contains("container died"));
}

TEST_CASE("attach stream: EOF, deadline, and a stream that is not multiplexed", "[unit]") {
  {
    Pair pair;
    AttachStream stream(HijackedConnection{std::move(pair.ours), ""}, "t");
    char buf[8];
    auto timed_out = stream.Read(buf, sizeof buf, Clock::now() + 50ms);
    REQUIRE_FALSE(timed_out);
    CHECK(timed_out.error().code == ErrorCode::kTimeout);
    pair.Send(Frame(1, "x"));
    pair.peer.Reset();
    auto got = ReadN(stream, 10);
    REQUIRE(got);
    CHECK(*got == "x");
    CHECK(stream.Read(buf, sizeof buf, Clock::now() + 1s).value() == 0);
  }
  {
    Pair pair;
    AttachStream stream(HijackedConnection{std::move(pair.ours), ""}, "t");
    pair.Send("raw tty text\n");
    char buf[8];
    auto bad = stream.Read(buf, sizeof buf, Clock::now() + 5s);
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("corrupt"));
  }
}

namespace {

// A one-shot unix-socket server answering the first request with `reply`.
class FakeDaemon {
 public:
  explicit FakeDaemon(std::string reply) : reply_(std::move(reply)) {
    path_ = dir_.Join("docker.sock");
    listener_.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_.get(), 1) == 0);
    thread_ = std::thread([this] {
      Fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      char buf[4096];
      while (request_.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(client.get(), buf, sizeof buf);
        if (n <= 0) return;
        request_.append(buf, static_cast<size_t>(n));
      }
      (void)::send(client.get(), reply_.data(), reply_.size(), MSG_NOSIGNAL);
      // Echo what follows (the "container's stdin") back as a stdout frame, then close.
      ssize_t n = ::read(client.get(), buf, sizeof buf);
      if (n > 0) {
        std::string frame = Frame(1, std::string(buf, static_cast<size_t>(n)));
        (void)::send(client.get(), frame.data(), frame.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~FakeDaemon() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  const std::string& path() const { return path_; }
  const std::string& request() const { return request_; }

 private:
  testing::TempDir dir_;
  std::string path_;
  std::string reply_;
  std::string request_;
  Fd listener_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("hijack: upgrade request, and stream bytes that came with the head", "[unit]") {
  FakeDaemon daemon(
      "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
      "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" +
      Frame(1, "hello\n"));
  auto connection = OpenHijacked(daemon.path(), "/v1.41/containers/abc/attach?stream=1", 5s);
  REQUIRE(connection);
  AttachStream stream(std::move(*connection), "t");
  CHECK(ReadN(stream, 6).value() == "hello\n");
  REQUIRE(stream.Write("ping\n"));
  CHECK(ReadN(stream, 5).value() == "ping\n");
  CHECK_THAT(daemon.request(),
             Catch::StartsWith("POST /v1.41/containers/abc/attach?stream=1 HTTP/1.1\r\n") &&
                 Catch::Contains("Connection: Upgrade\r\n") && Catch::Contains("Upgrade: tcp\r\n"));
}

TEST_CASE("hijack: an error reply carries the daemon's message", "[unit]") {
  std::string body = R"({"message":"No such container: abc"})";
  FakeDaemon daemon(fmt::format(
      "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body));
  auto connection = OpenHijacked(daemon.path(), "/v1.41/containers/abc/attach", 5s);
  REQUIRE_FALSE(connection);
  CHECK(connection.error().code == ErrorCode::kNotFound);
  CHECK_THAT(connection.error().message, Catch::EndsWith("404: No such container: abc"));
}

TEST_CASE("no daemon at the socket: a clear sandbox_unavailable", "[unit]") {
  testing::TempDir dir;
  docker::DockerBackendOptions options;
  options.socket_path = dir.Join("none.sock");
  auto backend = DockerBackend::Connect(options);
  REQUIRE_FALSE(backend);
  CHECK(backend.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(backend.error().message,
             Catch::Contains("no Docker daemon reachable at " + dir.Join("none.sock")));
  auto hijack = OpenHijacked(dir.Join("none.sock"), "/x", 1s);
  REQUIRE_FALSE(hijack);
  CHECK(hijack.error().code == ErrorCode::kSandboxUnavailable);

  ::setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
  auto tcp = DockerBackend::Connect();
  ::unsetenv("DOCKER_HOST");
  REQUIRE_FALSE(tcp);
  CHECK(tcp.error().code == ErrorCode::kInvalidArgument);
  CHECK_THAT(tcp.error().message, Catch::Contains("DOCKER_HOST"));
}

}  // namespace attach_stream_test
