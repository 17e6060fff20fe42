// Network egress by allowlist (issue #9), through the SessionManager on a real sandbox: pip and
// urllib reach a PEP 503 index on this machine's loopback (HTTP and HTTPS with a self-signed
// certificate) through the session's proxy; what the list does not name is refused with a
// reason; the sandbox itself still has no resolver and no route. No internet here, so every
// server is the test's own. The list allows the loopback index by IP entries (127.0.0.1:PORT):
// on this machine that is the only way, and it is also what proves that a *name* resolving to
// 127.0.0.1 stays refused when no IP or CIDR entry covers it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "runtime/base/files.h"
#include "runtime/session/egress_socket.h"
#include "runtime/session/package_installer.h"
#include "tests/runtime/behaviour/behaviour_fixture.h"
#include "tests/support/log_capture.h"
#include "tests/support/test_support.h"

namespace sandbox::testing::egress_test {
namespace {

using namespace std::chrono_literals;

// The PEP 503 index fixture (tests/support/pep503_index.py) serving `dir` in the background.
class IndexServer {
 public:
  IndexServer(const std::string& dir, const std::string& port_file, const std::string& tls) {
    std::string script = SourceDir() + "/tests/support/pep503_index.py";
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      std::string command = "exec python3 " + script + " serve " + dir + " --port-file " +
                            port_file + " " + tls + " >/dev/null 2>&1";
      ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::ifstream in(port_file);
      if (!(in >> port_)) std::this_thread::sleep_for(25ms);
    }
    REQUIRE(port_ != 0);
  }
  ~IndexServer() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// A TCP echo service on 127.0.0.1 that counts the connections it has seen end.
class EchoServer {
 public:
  EchoServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_, 8) == 0);
    socklen_t size = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        std::thread([this, fd] {
          char buffer[4096];
          for (;;) {
            ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0 || ::send(fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
          }
          ::close(fd);
          ++ended_;
        }).detach();
      }
    });
  }
  ~EchoServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  int port() const { return port_; }
  int ended() const { return ended_.load(); }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> ended_{0};
  std::thread thread_;
};

// Wheels, a certificate and both index servers, made in `tmp`.
struct Indexes {
  TempDir tmp;
  std::string cert;
  std::unique_ptr<IndexServer> http;
  std::unique_ptr<IndexServer> https;

  explicit Indexes(const std::string& extra_packages = "") {
    std::string script = SourceDir() + "/tests/support/pep503_index.py";
    std::string out;
    REQUIRE(RunShell("python3 " + script + " build " + tmp.Join("index") +
                         " egress-alpha==1.0 egress-beta==2.0 " + extra_packages + " >/dev/null",
                     &out) == 0);
    REQUIRE(RunShell("python3 " + script + " cert " + tmp.Join("tls") + " >/dev/null") == 0);
    cert = tmp.Join("tls/cert.pem");
    http = std::make_unique<IndexServer>(tmp.Join("index"), tmp.Join("http.port"), "");
    https = std::make_unique<IndexServer>(
        tmp.Join("index"), tmp.Join("https.port"),
        "--tls-cert " + cert + " --tls-key " + tmp.Join("tls/key.pem"));
  }
};

RunResult Shell(BehaviourFixture& fixture, const std::string& session, const std::string& command,
                double timeout_s = 60) {
  RunRequest request;
  request.kind = RunRequest::Kind::kShell;
  request.code = command;
  request.timeout_s = timeout_s;
  auto result = fixture.manager().Run(session, request);
  if (!result) FAIL("run: " << result.error().message);
  return *result;
}

// Python that opens a CONNECT tunnel through the sandbox's proxy and prints the status line or
// the error (http.client's own tunnel code, as pip and requests use).
std::string TunnelProbe(const std::string& host, int port) {
  return "import http.client, os\n"
         "c = http.client.HTTPConnection('127.0.0.1', 3128, timeout=20)\n"
         "c.set_tunnel('" +
         host + "', " + std::to_string(port) +
         ")\n"
         "try:\n"
         "    c.connect(); print('connected')\n"
         "except OSError as e:\n"
         "    print(e)\n";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

BEHAVIOUR_TEST("egress: pip and urllib reach an allowed index and the rest is refused",
               "[egress]") {
  Indexes indexes;
  EchoServer echo;
  const std::string http_port = std::to_string(indexes.http->port());
  const std::string https_port = std::to_string(indexes.https->port());
  fixture.Reconfigure([&](SessionConfig& config) {
    auto allow = egress::Allowlist::Parse(
        "127.0.0.1:" + https_port + ",localhost:" + std::to_string(echo.port()) + ",pypi.org");
    REQUIRE(allow);
    config.egress.allow = *allow;
    config.egress.index_url = "http://127.0.0.1:" + http_port + "/simple";  // allowed implicitly
    REQUIRE(egress::ApplyIndexUrl(config.egress));
  });
  std::string session = fixture.NewSession();

  // sandbox_install_packages from the index, then import in the same session.
  auto installed = InstallPackages(fixture.manager(), session, {{"egress-alpha"}, 60});
  INFO((installed ? *installed : installed.error().message));
  REQUIRE(installed);
  CHECK(fixture.Python(session, "import egress_alpha; print(egress_alpha.hello())").stdout_text ==
        "hello from egress-alpha 1.0\n");

  // pip inside sandbox_run_command, over HTTPS with the test's certificate (PIP_CERT).
  auto cert = ReadText(indexes.cert);
  REQUIRE(fixture.manager().WriteFile(session, "cert.pem", cert, true));
  RunResult pip = Shell(fixture, session,
                        "PIP_CERT=/mnt/data/cert.pem python3 -m pip install --user -q "
                        "--disable-pip-version-check --index-url https://127.0.0.1:" +
                            https_port +
                            "/simple egress-beta 2>&1 && python3 -c 'import "
                            "egress_beta; print(egress_beta.__version__)'");
  INFO(pip.stdout_text);
  CHECK(pip.exit_code == 0);
  CHECK(pip.stdout_text.ends_with("2.0\n"));

  // urllib through the proxy variables. The index is on the host's 127.0.0.1, which NO_PROXY
  // sends to the sandbox's own loopback, so this one probe clears NO_PROXY.
  RunResult fetched = fixture.Python(
      session,
      "import os, urllib.request\nos.environ['NO_PROXY'] = os.environ['no_proxy'] = ''\n"
      "print(urllib.request.urlopen('http://127.0.0.1:" +
          http_port + "/simple/', timeout=20).status)");
  CHECK(fetched.stdout_text == "200\n");

  // Refused: a host not listed, a port not listed, IP literals, and a listed name that resolves
  // to loopback with no IP/CIDR entry for it.
  CHECK(fixture.Python(session, TunnelProbe("example.com", 443)).stdout_text ==
        "Tunnel connection failed: 403 egress refused: example.com port 443 is not on the "
        "allowlist\n");
  CHECK(fixture.Python(session, TunnelProbe("pypi.org", 8080)).stdout_text ==
        "Tunnel connection failed: 403 egress refused: pypi.org port 8080 is not on the "
        "allowlist\n");
  for (const char* literal : {"127.0.0.1", "0x7f000001", "169.254.169.254"}) {
    INFO(literal);
    CHECK(fixture.Python(session, TunnelProbe(literal, echo.port()))
              .stdout_text.starts_with("Tunnel connection failed: 403 egress refused: IP address"));
  }
  CHECK(fixture.Python(session, TunnelProbe("localhost", echo.port())).stdout_text ==
        "Tunnel connection failed: 403 egress refused: localhost resolves to 127.0.0.1, a "
        "loopback address no IP or CIDR entry allows\n");
  RunResult pip_refused = Shell(fixture, session,
                                "python3 -m pip download --no-deps -d /tmp/x --retries 1 "
                                "--timeout 5 --index-url https://example.com/simple egress-alpha "
                                "2>&1; echo exit=$?");
  INFO(pip_refused.stdout_text);
  CHECK(pip_refused.stdout_text.find("403 egress refused: example.com port 443 is not on") !=
        std::string::npos);

  // No resolver inside, and no way out but the proxy: raw TCP and UDP fail.
  RunResult raw = fixture.Python(session,
                                 "import socket\n"
                                 "try:\n"
                                 "    socket.getaddrinfo('pypi.org', 443); print('resolved')\n"
                                 "except socket.gaierror: print('no resolver')\n"
                                 "for address in [('127.0.0.1', " +
                                     http_port +
                                     "), ('10.255.255.1', 80), ('151.101.0.223', 443)]:\n"
                                     "    try:\n"
                                     "        socket.create_connection(address, timeout=3); "
                                     "print('tcp out')\n"
                                     "    except OSError: print('tcp refused')\n"
                                     "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                                     "try:\n"
                                     "    u.sendto(b'x', ('8.8.8.8', 53)); print('udp out')\n"
                                     "except OSError: print('udp refused')\n");
  CHECK(raw.stdout_text == "no resolver\ntcp refused\ntcp refused\ntcp refused\nudp refused\n");

  // The channel cannot be opened a second time from inside: on Docker the bound socket has no
  // listener any more (the server accepted init's one connection and closed it), and the
  // namespace backend has no socket at all (init inherited its end). Nor does the worker see
  // which channel init was given.
  RunResult channel =
      fixture.Python(session,
                     "import os, socket\n"
                     "print(sorted(k for k in os.environ if "
                     "k.startswith('SANDBOX_AGENT_EGRESS')))\n"
                     "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
                     "try:\n"
                     "    s.connect('/run/sandbox-egress.sock'); print('connected')\n"
                     "except OSError as e: print(type(e).__name__)\n");
  CHECK(channel.stdout_text ==
        std::string("[]\n") +
            (fixture.backend() == "docker" ? "ConnectionRefusedError\n" : "FileNotFoundError\n"));
  // And no socket is left in the server's private directory once the sandbox started.
  std::string left;
  RunShell("ls -A " + EgressSocketDir(fixture.config().state_dir) + " 2>/dev/null", &left);
  CHECK(left == "");

  // Reported in status, with the usage.
  auto info = fixture.manager().Get(session);
  REQUIRE(info);
  CHECK(info->egress.enabled);
  CHECK(info->egress.index_url == "http://127.0.0.1:" + http_port + "/simple");
  CHECK(info->egress.usage.connections >= 3);
  CHECK(info->egress.usage.refused >= 7);
  CHECK(info->egress.usage.bytes > 1000);
}

BEHAVIOUR_TEST("egress: a sealed session and the byte cap and tunnels closed with the session",
               "[egress]") {
  Indexes indexes("egress-big==1.0 --pad-bytes 1000000");
  EchoServer echo;
  fixture.Reconfigure([&](SessionConfig& config) {
    auto allow = egress::Allowlist::Parse("127.0.0.1:" + std::to_string(echo.port()) +
                                          ",127.0.0.1:" + std::to_string(indexes.http->port()));
    REQUIRE(allow);
    config.egress.allow = *allow;
    config.egress.limits.max_bytes = 64 << 10;
  });

  // egress: false seals a session on a server that has an allowlist.
  SessionOptions sealed_options;
  sealed_options.egress = false;
  std::string sealed = fixture.NewSession(sealed_options);
  CHECK(fixture.Python(sealed, "import os\nprint(os.environ.get('HTTPS_PROXY'))").stdout_text ==
        "None\n");
  CHECK(fixture
            .Python(sealed,
                    "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 3128), "
                    "timeout=3); print('proxy')\nexcept OSError: print('no proxy')")
            .stdout_text == "no proxy\n");
  auto sealed_install = InstallPackages(fixture.manager(), sealed, {{"egress-alpha"}, 60});
  REQUIRE_FALSE(sealed_install);
  CHECK(sealed_install.error().code == ErrorCode::kInstallFailed);
  CHECK_FALSE(fixture.manager().Get(sealed)->egress.enabled);

  std::string open_session = fixture.NewSession();
  // The byte cap: a 1 MB wheel through a 64 KiB budget is cut off, then refused.
  std::string big = fixture
                        .Python(open_session,
                                "import os, urllib.request\n"
                                "os.environ['NO_PROXY'] = os.environ['no_proxy'] = ''\ntry:\n"
                                "    n = len(urllib.request.urlopen('http://127.0.0.1:" +
                                    std::to_string(indexes.http->port()) +
                                    "/packages/egress_big-1.0-py3-none-any.whl', "
                                    "timeout=20).read()); print(n)\n"
                                    "except Exception as e: print('cut')\n")
                        .stdout_text;
  CHECK((big == "cut\n" || std::stoul(big) < (64u << 10)));
  CHECK(fixture.manager().Get(open_session)->egress.usage.byte_limit_reached);
  fixture.manager().Close(open_session);

  // A fresh server (the cap is per session), one tunnel held open by the worker, then close.
  fixture.Reconfigure([&](SessionConfig& config) { config.egress.limits.max_bytes = 1 << 20; });
  std::string holder = fixture.NewSession();
  CHECK(fixture
            .Python(holder,
                    "import socket\n"
                    "held = socket.create_connection(('127.0.0.1', 3128), timeout=20)\n"
                    "held.sendall(b'CONNECT 127.0.0.1:" +
                        std::to_string(echo.port()) +
                        " HTTP/1.1\\r\\n\\r\\n')\n"
                        "print(held.recv(100).split(b'\\r\\n')[0].decode())")
            .stdout_text == "HTTP/1.1 200 Connection established\n");
  CHECK(fixture.manager().Get(holder)->egress.usage.open == 1);
  int ended_before = echo.ended();
  REQUIRE(fixture.manager().Close(holder, /*force=*/true));
  for (int i = 0; i < 100 && echo.ended() == ended_before; ++i) std::this_thread::sleep_for(20ms);
  CHECK(echo.ended() == ended_before + 1);
}

}  // namespace sandbox::testing::egress_test

namespace sandbox::testing::egress_test {

BEHAVIOUR_TEST("egress: a flood of connections is held to the cap and its log stays small",
               "[egress]") {
  EchoServer echo;
  fixture.Reconfigure([&](SessionConfig& config) {
    auto allow = egress::Allowlist::Parse("127.0.0.1:" + std::to_string(echo.port()));
    REQUIRE(allow);
    config.egress.allow = *allow;
  });
  std::string session = fixture.NewSession();
  const uint64_t cap =
      static_cast<uint64_t>(fixture.manager().config().egress.limits.max_connections);
  LogCapture log(spdlog::level::info);
  // 600 connections to the proxy at once, none sending its request: `cap` wait for their head,
  // the proxy refuses every other one with 503. One warning line per refusal was 76-82 KB.
  RunResult flood = fixture.Python(session,
                                   "import socket\n"
                                   "held = []\n"
                                   "for i in range(600):\n"
                                   "    held.append(socket.create_connection(('127.0.0.1', 3128), "
                                   "timeout=20))\n"
                                   "print(len(held))\n");
  CHECK(flood.stdout_text == "600\n");
  uint64_t refused = 0;
  for (int i = 0; i < 500 && refused < 600 - cap; ++i) {
    refused = fixture.manager().Get(session)->egress.usage.refused;
    if (refused < 600 - cap) std::this_thread::sleep_for(20ms);
  }
  CHECK(refused >= 600 - cap);
  REQUIRE(fixture.manager().Close(session, /*force=*/true));
  std::string text = log.Text();
  INFO(text.substr(0, 2000));
  std::cerr << fmt::format("[{}] a flood of 600 connections: {} refused, {} bytes of log\n",
                           fixture.backend(), refused, text.size());
  CHECK(text.size() < 8192);
  CHECK(text.find("refused (503)") != std::string::npos);
  CHECK(text.find("not logged one by one") != std::string::npos);
}

BEHAVIOUR_TEST("egress: a pooled sandbox carries its session's egress", "[egress]") {
  EchoServer echo;
  fixture.Reconfigure([&](SessionConfig& config) {
    auto allow = egress::Allowlist::Parse("127.0.0.1:" + std::to_string(echo.port()));
    REQUIRE(allow);
    config.egress.allow = *allow;
    config.pool_size = 1;
  });
  for (int i = 0; i < 600 && fixture.manager().PoolStatus()->ready == 0; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  INFO(fixture.manager().PoolStatus()->last_error);
  REQUIRE(fixture.manager().PoolStatus()->ready == 1);
  std::string session = fixture.NewSession();
  CHECK(fixture.manager().PoolStatus()->claimed == 1);
  CHECK(fixture.Python(session, TunnelProbe("127.0.0.1", echo.port())).stdout_text ==
        "connected\n");
  CHECK(fixture.Python(session, TunnelProbe("example.com", 443)).stdout_text ==
        "Tunnel connection failed: 403 egress refused: example.com port 443 is not on the "
        "allowlist\n");
  CHECK(fixture.manager().Get(session)->egress.usage.connections == 1);
  // The refill (another pooled sandbox, its own channel) leaves no socket behind either.
  for (int i = 0; i < 600 && fixture.manager().PoolStatus()->ready == 0; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  std::string left;
  RunShell("ls -A " + EgressSocketDir(fixture.config().state_dir) + " 2>/dev/null", &left);
  CHECK(left == "");
}

BEHAVIOUR_TEST("egress: a hibernated session resumes with its egress and its state", "[egress]") {
  EchoServer echo;
  fixture.Reconfigure([&](SessionConfig& config) {
    auto allow = egress::Allowlist::Parse("127.0.0.1:" + std::to_string(echo.port()));
    REQUIRE(allow);
    config.egress.allow = *allow;
    config.hibernate_after = std::chrono::hours(1);  // on; the test hibernates by hand
  });
  std::string session = fixture.NewSession();
  CHECK(fixture.Python(session, "x = 41").exit_code == 0);
  CHECK(fixture.Python(session, TunnelProbe("127.0.0.1", echo.port())).stdout_text ==
        "connected\n");
  REQUIRE(fixture.manager().Hibernate(session));
  CHECK(fixture.manager().HibernatedCount() == 1);
  // The next call resumes it in a new sandbox, which gets the session's egress again (on
  // gVisor a new bridge to the proxy), and the allowlist still holds.
  CHECK(fixture.Python(session, TunnelProbe("127.0.0.1", echo.port())).stdout_text ==
        "connected\n");
  CHECK(fixture.Python(session, "print(x + 1)").stdout_text == "42\n");
  CHECK(fixture.Python(session, TunnelProbe("example.com", 443)).stdout_text ==
        "Tunnel connection failed: 403 egress refused: example.com port 443 is not on the "
        "allowlist\n");
}

}  // namespace sandbox::testing::egress_test
