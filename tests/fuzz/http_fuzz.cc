// Fuzz target: the Streamable HTTP request path up to the dispatcher. The input is what one
// client sends on one TCP connection to the real HttpTransport (Beast's parser, the admission
// checks, sessions, SSE, /files, /healthz), serving the server `serve` builds with a backend
// that starts no sandbox (no_backend_server.h). The client then shuts its side and reads the
// answer to the end.
// Two placeholders in the input are replaced before it is sent, so seeds (and what the fuzzer
// makes of them) can name what only exists at run time: "@PORT@" (the port, for Origin) and
// "@SID@" (an MCP session this target keeps initialized).
// Invariants: nothing crashes; whatever the server answers starts as an HTTP/1.1 response;
// the server keeps answering (every 32nd input, a health check on a new connection gets 200).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "mcp/http_transport.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/no_backend_server.h"

namespace {

using namespace std::chrono_literals;

// One HTTP exchange: sends `request`, half-closes, returns everything the server wrote.
std::string Exchange(int port, std::string_view request) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server refused early and closed: its answer is still readable
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  // Reset instead of a FIN: no TIME_WAIT, so a long run does not run out of ports.
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(fd);
  return answer;
}

std::string Post(int port, const std::string& body, const std::string& session) {
  std::string request =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n";
  if (!session.empty()) {
    request += "Mcp-Session-Id: " + session + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
  }
  request += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  return Exchange(port, request + body);
}

struct Harness {
  sandbox::fuzz::NoBackendServer& backend = sandbox::fuzz::SharedNoBackendServer();
  std::unique_ptr<sandbox::mcp::HttpTransport> transport;
  std::thread serving;
  int port = 0;
  std::string session;
  std::chrono::steady_clock::time_point session_made;

  Harness() {
    sandbox::mcp::HttpOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.threads = 4;
    options.io_threads = 1;
    options.max_body_bytes = 1u << 20;
    options.header_timeout = 2s;
    options.keep_alive_timeout = 2s;
    options.body_timeout = 2s;
    options.write_timeout = 2s;
    options.session_idle_ttl = 60s;
    options.read_file = sandbox::mcp::SandboxFileReader(*backend.sessions);
    transport = std::make_unique<sandbox::mcp::HttpTransport>(*backend.server, options);
    if (!transport->Bind()) throw std::runtime_error("bind failed");
    port = transport->port();
    serving = std::thread([this] { (void)transport->Serve(); });
  }

  // An initialized MCP session, renewed well before the idle TTL could forget it.
  const std::string& Session() {
    auto now = std::chrono::steady_clock::now();
    if (!session.empty() && now - session_made < 20s) return session;
    std::string answer = Post(
        port,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
        R"("capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}})",
        "");
    constexpr std::string_view kHeader = "Mcp-Session-Id: ";
    size_t at = answer.find(kHeader);
    FUZZ_CHECK(at != std::string::npos);
    size_t end = answer.find("\r\n", at);
    session = answer.substr(at + kHeader.size(), end - at - kHeader.size());
    (void)Post(port, R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session);
    session_made = now;
    return session;
  }
};

void ReplaceAll(std::string& text, std::string_view from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* harness = new Harness();  // leaked: libFuzzer exits without unwinding
  std::string request(reinterpret_cast<const char*>(data), size);
  if (request.find("@SID@") != std::string::npos) ReplaceAll(request, "@SID@", harness->Session());
  ReplaceAll(request, "@PORT@", std::to_string(harness->port));
  std::string answer = Exchange(harness->port, request);
  if (!answer.empty()) FUZZ_CHECK(answer.rfind("HTTP/1.1 ", 0) == 0);
  static unsigned inputs = 0;
  if (++inputs % 32 != 0) return 0;
  std::string health = Exchange(
      harness->port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  FUZZ_CHECK(health.rfind("HTTP/1.1 200", 0) == 0);
  return 0;
}
