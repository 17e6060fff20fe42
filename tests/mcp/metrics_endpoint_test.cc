// /metrics: on the HTTP listener behind the bearer token, and on a listener of its own
// (SANDBOX_METRICS_ADDR). Each ctest case runs in its own process, so the counters start at 0.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/http_admission.h"
#include "mcp/http_transport.h"
#include "mcp/metrics_listener.h"
#include "mcp/tool_result.h"

namespace metrics_endpoint_test {

using namespace sandbox::mcp;

namespace {

constexpr char kInit[] =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
constexpr char kToken[] = "metrics-test-token-0123456789";

std::vector<Tool> EchoTool() {
  Tool echo{"echo",
            "Echo",
            "Returns its text.",
            {{"type", "object"},
             {"properties", {{"text", {{"type", "string"}}}}},
             {"additionalProperties", false}},
            nullptr,
            nullptr,
            [](ToolCall&, const Json& args) {
              ToolResultBuilder result(1 << 20);
              result.AddText(args.value("text", ""));
              return result.Build();
            }};
  return {echo};
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

// The value of the sample `series` (name and labels, as written) in a scrape; -1 when absent.
double Value(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST_CASE("metrics: the HTTP listener serves /metrics behind the token [unit]", "[unit]") {
  Server server{ServerOptions{}, EchoTool()};
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.auth_tokens = {kToken};
  HttpTransport transport(server, options);
  REQUIRE(transport.Bind());
  std::thread serving([&] { (void)transport.Serve(); });
  {
    httplib::Client client("127.0.0.1", transport.port());
    client.set_read_timeout(10, 0);
    httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kToken},
                             {"Accept", "application/json, text/event-stream"}};
    auto init = client.Post("/mcp", auth, kInit, "application/json");
    REQUIRE(init->status == 200);
    auth.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
    auth.emplace("MCP-Protocol-Version", "2025-11-25");
    // The registry is the process's: other tests in this process count too, so the checks
    // below compare a scrape before with one after.
    auto before = client.Get("/metrics", auth);
    REQUIRE(before);
    REQUIRE(before->status == 200);
    CHECK(client.Get("/metrics")->status == 401);
    for (int id = 2; id < 5; ++id) {
      auto call = client.Post(
          "/mcp", auth,
          fmt::format(
              R"({{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}})",
              id),
          "application/json");
      REQUIRE(call->status == 200);
    }
    auto scrape = client.Get("/metrics", auth);
    REQUIRE(scrape);
    CHECK(scrape->status == 200);
    CHECK(scrape->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
    const std::string& text = scrape->body;
    auto delta = [&](const std::string& series) {
      return Value(text, series) - std::max(0.0, Value(before->body, series));
    };
    CHECK(delta("mcp_sandbox_tool_calls_total{tool=\"echo\",outcome=\"ok\"}") == 3);
    CHECK(delta("mcp_sandbox_tool_call_duration_seconds_count{tool=\"echo\"}") == 3);
    CHECK(delta("mcp_sandbox_http_refusals_total{status=\"401\"}") == 1);
    CHECK(Value(text, "mcp_sandbox_http_requests_in_flight") >= 1);  // this scrape
    CHECK(Has(text, "mcp_sandbox_http_connections_open "));
    CHECK(Has(text, "process_open_fds "));
    // The token is never part of what is exposed.
    CHECK_FALSE(Has(text, kToken));
  }
  transport.Stop();
  serving.join();
}

TEST_CASE("metrics: admission routes /metrics and asks for the token [unit]", "[unit]") {
  HttpAdmissionPolicy policy;
  policy.auth_tokens = {kToken};
  HttpAdmission admission(policy);
  HttpRequestHead head;
  head.method = "GET";
  head.target = "/metrics";
  head.fields = {{"Host", "127.0.0.1:8080"}};
  HttpVerdict refused = admission.Judge(head);
  CHECK(refused.route == HttpRoute::kMetrics);
  CHECK_FALSE(refused.admit);
  CHECK(refused.response.status == 401);
  head.fields.push_back({"Authorization", std::string("Bearer ") + kToken});
  CHECK(admission.Judge(head).admit);
  head.method = "POST";
  CHECK(admission.Judge(head).response.status == 405);
  // Without tokens configured, /metrics is as open as the rest.
  head.method = "GET";
  head.fields = {{"Host", "localhost"}};
  CHECK(HttpAdmission(HttpAdmissionPolicy{}).Judge(head).admit);
}

TEST_CASE("metrics: listen addresses need a host and a port [unit]", "[unit]") {
  auto v4 = ParseListenAddress("127.0.0.1:9464");
  REQUIRE(v4);
  CHECK(v4->host == "127.0.0.1");
  CHECK(v4->port == 9464);
  auto v6 = ParseListenAddress("[::1]:0");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 0);
  for (const char* bad : {"", "9464", "127.0.0.1", "127.0.0.1:", ":9464", "::1:9464", "[::1]9464",
                          "host:99999", "host:12a", "a b:1"}) {
    INFO(bad);
    CHECK_FALSE(ParseListenAddress(bad));
  }
}

TEST_CASE("metrics: a listener of its own serves GET /metrics only [unit]", "[unit]") {
  auto listener = MetricsListener::Start({.host = "127.0.0.1", .port = 0});
  REQUIRE(listener);
  httplib::Client client("127.0.0.1", (*listener)->port());
  client.set_read_timeout(10, 0);
  auto scrape = client.Get("/metrics");
  REQUIRE(scrape);
  CHECK(scrape->status == 200);
  CHECK(scrape->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(Has(scrape->body, "# TYPE mcp_sandbox_tool_calls_total counter\n"));
  CHECK(client.Get("/other")->status == 404);
  CHECK(client.Post("/metrics", "x", "text/plain")->status == 405);
  // A second listener on the same port fails with the reason.
  auto taken = MetricsListener::Start({.host = "127.0.0.1", .port = (*listener)->port()});
  REQUIRE_FALSE(taken);
  CHECK(Has(taken.error().message, "bind"));
  // A name that does not resolve fails too.
  CHECK_FALSE(MetricsListener::Start({.host = "no-such-host.invalid", .port = 0}));
}

// Issue #36: the listener served one connection at a time, so a client that connected and said
// nothing held every scrape for its 5 s head timeout.
TEST_CASE("metrics: idle connections to the listener delay no scrape [unit]", "[unit]") {
  auto listener = MetricsListener::Start({.host = "127.0.0.1", .port = 0});
  REQUIRE(listener);
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>((*listener)->port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    idle.push_back(fd);
  }
  // One idle client has half a head in: it is waiting for the rest too.
  REQUIRE(::send(idle[0], "GET /metr", 9, MSG_NOSIGNAL) == 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted by now
  httplib::Client client("127.0.0.1", (*listener)->port());
  client.set_read_timeout(10, 0);
  for (int i = 0; i < 3; ++i) {
    auto started = std::chrono::steady_clock::now();
    auto scrape = client.Get("/metrics");
    auto took = std::chrono::steady_clock::now() - started;
    REQUIRE(scrape);
    CHECK(scrape->status == 200);
    CHECK(took < std::chrono::seconds(1));
  }
  // The idle ones are still served when they finish their heads.
  std::string rest = "ics HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(idle[0], rest.data(), rest.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(rest.size()));
  char answer[64] = {};
  timeval timeout{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  CHECK(::recv(idle[0], answer, sizeof answer - 1, MSG_WAITALL) > 0);
  CHECK(std::string(answer).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  for (int fd : idle) ::close(fd);
}

}  // namespace

}  // namespace metrics_endpoint_test
