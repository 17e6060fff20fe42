// The Docker backend's egress channel socket (runtime/session/egress_socket.h): a private
// directory, one connection accepted and no second one, nothing left behind on any path.
#include "runtime/session/egress_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <catch2/catch.hpp>

#include "tests/support/test_support.h"

namespace sandbox::testing::egress_socket_test {
namespace {

using namespace std::chrono_literals;

// Connects a SOCK_SEQPACKET socket to `path`; the fd, or -errno.
int Connect(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  return fd;
}

bool Exists(const std::string& path) {
  struct stat st = {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("egress socket: a session of a replica with a 63-character id fits sun_path", "[unit]") {
  TempDir tmp;
  const std::string dir = EgressSocketDir(tmp.path());
  const std::string hex(32, 'c');
  const std::string id = "sess_" + std::string(62, 'r') + "9_" + hex;  // the longest id
  auto socket = EgressSocket::Listen(dir, id);
  REQUIRE(socket);
  CHECK(socket->path() == dir + "/sess_" + hex + ".sock");  // named without its replica
  int client = Connect(socket->path());
  REQUIRE(client >= 0);
  CHECK(socket->AcceptOnce(2000ms));
  ::close(client);
}

TEST_CASE("egress socket: private dir, one connection, then gone", "[unit]") {
  TempDir tmp;
  const std::string dir = EgressSocketDir(tmp.path());
  auto socket = EgressSocket::Listen(dir, "sess_0123456789ab");
  REQUIRE(socket);
  CHECK(socket->path() == dir + "/sess_0123456789ab.sock");

  struct stat st = {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);  // no other host user can reach the socket
  REQUIRE(::lstat(socket->path().c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0666);  // the sandbox's uid is not ours

  int client = Connect(socket->path());
  REQUIRE(client >= 0);
  auto channel = socket->AcceptOnce(2000ms);
  REQUIRE(channel);
  CHECK_FALSE(Exists(dir + "/sess_0123456789ab.sock"));
  CHECK(socket->path().empty());
  // A packet goes through, and the channel is blocking like a socketpair end.
  REQUIRE(::send(client, "x", 1, 0) == 1);
  char byte = 0;
  CHECK(::recv(channel->get(), &byte, 1, 0) == 1);
  CHECK(byte == 'x');
  CHECK((::fcntl(channel->get(), F_GETFL) & O_NONBLOCK) == 0);
  ::close(client);
  // Nothing can connect again.
  CHECK(Connect(dir + "/sess_0123456789ab.sock") == -ENOENT);
}

TEST_CASE("egress socket: a second connection before the accept is not served", "[unit]") {
  TempDir tmp;
  auto socket = EgressSocket::Listen(EgressSocketDir(tmp.path()), "sess_0123456789ab");
  REQUIRE(socket);
  int first = Connect(socket->path());
  REQUIRE(first >= 0);
  int second = Connect(socket->path());  // queued or refused: the backlog is 1
  auto channel = socket->AcceptOnce(2000ms);
  REQUIRE(channel);
  if (second >= 0) {
    // The listener is closed: the queued connection is reset, never accepted.
    char byte = 0;
    CHECK(::recv(second, &byte, 1, 0) <= 0);
    ::close(second);
  }
  ::close(first);
}

TEST_CASE("egress socket: nobody connects, a refused dir, and the destructor", "[unit]") {
  TempDir tmp;
  const std::string dir = EgressSocketDir(tmp.path());
  std::string path;
  {
    auto socket = EgressSocket::Listen(dir, "sess_0123456789ab");
    REQUIRE(socket);
    auto channel = socket->AcceptOnce(50ms);
    REQUIRE_FALSE(channel);
    CHECK(channel.error().code == ErrorCode::kSandboxUnavailable);
    CHECK_FALSE(Exists(dir + "/sess_0123456789ab.sock"));

    auto unused = EgressSocket::Listen(dir, "sess_00000000000a");
    REQUIRE(unused);
    path = unused->path();
    CHECK(Exists(path));
  }
  CHECK_FALSE(Exists(path));  // a failed start never leaves one behind

  // A dir others can enter is made private again; a bad name is refused.
  REQUIRE(::chmod(dir.c_str(), 0755) == 0);
  REQUIRE(EgressSocket::Listen(dir, "sess_0123456789ab"));
  struct stat st = {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK_FALSE(EgressSocket::Listen(dir, "../x"));
}

TEST_CASE("egress socket: the sweep takes only old sockets", "[unit]") {
  TempDir tmp;
  const std::string dir = EgressSocketDir(tmp.path());
  auto fresh = EgressSocket::Listen(dir, "sess_00000000000f");
  auto old = EgressSocket::Listen(dir, "sess_00000000000e");
  REQUIRE(fresh);
  REQUIRE(old);
  // A crashed server's socket: an hour and a bit old.
  struct timespec times[2] = {{::time(nullptr) - 4000, 0}, {::time(nullptr) - 4000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, old->path().c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
  REQUIRE(RunShell("touch -d '2 hours ago' " + dir + "/sess_not_a_socket.sock") == 0);
  CHECK(SweepEgressSockets(dir, kStaleEgressSocketAge) == 1);
  CHECK_FALSE(Exists(old->path()));
  CHECK(Exists(fresh->path()));
  CHECK(Exists(dir + "/sess_not_a_socket.sock"));
  CHECK(SweepEgressSockets(tmp.Join("missing"), kStaleEgressSocketAge) == 0);
}

}  // namespace sandbox::testing::egress_socket_test
