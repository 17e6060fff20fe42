// Issue #36 defect 1: no header built from request data can break out of its line. The writer
// (mcp/http_response_writer.h) refuses a field with CR, LF or another control byte; the OAuth
// challenge says "unknown key id", never the token's kid; and each place that builds a header
// from input (WWW-Authenticate, a download's Content-Type and Content-Disposition, CORS,
// Mcp-Session-Id, the metrics listener) is driven with hostile bytes over a real socket, and the
// raw answer is read for a line the server did not mean to write.
#include <httplib.h>

#include <thread>

#include <catch2/catch.hpp>

#include "mcp/http_reply.h"
#include "mcp/http_response_writer.h"
#include "mcp/http_transport.h"
#include "mcp/metrics_listener.h"
#include "tests/mcp/auth/fake_issuer.h"
#include "tests/mcp/auth/test_keys.h"
#include "tests/mcp/raw_http.h"

namespace http_header_injection_test {

using namespace sandbox::mcp;
using sandbox::mcp::auth::testing::FakeIssuer;
using sandbox::mcp::auth::testing::TestKey;
using sandbox::mcp::testing::HasHeaderLine;
using sandbox::mcp::testing::RawExchange;
using sandbox::mcp::testing::RawHead;

namespace {

constexpr char kHostile[] = "k9\r\nX-Injected: 1";

struct Served {
  Server server{ServerOptions{}, {}};
  std::unique_ptr<HttpTransport> transport;
  std::thread serving;
  sandbox::Status served;

  explicit Served(HttpOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    transport = std::make_unique<HttpTransport>(server, options);
    REQUIRE(transport->Bind());
    serving = std::thread([this] { served = transport->Serve(); });
  }
  ~Served() {
    transport->Stop();
    serving.join();
    CHECK(served);
  }
  int port() const { return transport->port(); }
};

std::string Post(std::string_view extra_fields, std::string_view body = "{}") {
  return fmt::format(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
      "Content-Type: application/json\r\nConnection: close\r\n{}Content-Length: {}\r\n\r\n{}",
      extra_fields, body.size(), body);
}

std::string Get(std::string_view target, std::string_view extra_fields = "") {
  return fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{}\r\n", target,
                     extra_fields);
}

}  // namespace

TEST_CASE("response writer: a field with CR, LF or another control byte is refused", "[unit]") {
  CHECK(IsFieldValue(""));
  CHECK(IsFieldValue("Bearer resource_metadata=\"https://x/y\", error=\"invalid_token\""));
  CHECK(IsFieldValue("attachment; filename=\"na\tme \xc3\xa9.csv\""));  // HTAB, obs-text
  for (std::string bad : std::initializer_list<std::string>{"a\rb", "a\nb", std::string("a\0b", 3),
                                                            "a\x01", "\x1f", "a\x7f"}) {
    INFO(bad.size());
    CHECK_FALSE(IsFieldValue(bad));
  }
  CHECK(IsFieldName("Mcp-Session-Id"));
  CHECK(IsFieldName("X-a!#$%&'*+-.^_`|~9"));
  for (const char* bad : {"", "Bad Name", "Bad:Name", "Bad\r\nName", "B\"", "B(", "B\x80"}) {
    INFO(bad);
    CHECK_FALSE(IsFieldName(bad));
  }

  HttpResponse response;
  response.status = 401;
  response.headers = {{"WWW-Authenticate", std::string("Bearer error_description=\"") + kHostile}};
  auto refused = SerializeResponse(response, false, false);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("WWW-Authenticate"));
  CHECK_THAT(refused.error().message, !Catch::Contains("X-Injected"));
  // The same check holds whoever built the field: a download's name, its type, a CORS echo.
  for (HttpField field : {HttpField{"Content-Disposition", "attachment; filename=\"a\r\nb\""},
                          HttpField{"Access-Control-Allow-Origin", "http://a\nX: 1"},
                          HttpField{"Mcp-Session-Id", "mcps_\r"}, HttpField{"Bad\nName", "v"}}) {
    INFO(field.name);
    CHECK_FALSE(SerializeResponse(
        {.status = 200, .content_type = "", .headers = {field}, .body = ""}, true, false));
    CHECK_FALSE(SerializeResponse(
        {.status = 200, .content_type = "", .headers = {field}, .body = ""}, true, true));
  }
  CHECK_FALSE(SerializeResponse(
      {.status = 200, .content_type = "text/plain\r\nX-Injected: 1", .headers = {}, .body = "x"},
      false, false));

  // What goes out instead: a 500 that closes the connection, nothing of the refused answer.
  bool close = false;
  std::string sent = SerializeOrServerError(response, &close);
  CHECK(close);
  CHECK(sent.rfind("HTTP/1.1 500 Internal Server Error\r\n", 0) == 0);
  CHECK_THAT(sent, Catch::Contains("Connection: close\r\n"));
  CHECK_FALSE(HasHeaderLine(sent, "X-Injected"));
  CHECK_FALSE(HasHeaderLine(sent, "WWW-Authenticate"));
  // A good answer is written as it was before the check.
  HttpResponse good{.status = 200, .content_type = "text/plain", .headers = {}, .body = "hi"};
  close = false;
  CHECK(SerializeOrServerError(good, &close) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
        "Connection: keep-alive\r\n\r\nhi");
  CHECK_FALSE(close);
}

TEST_CASE("OAuth: a hostile kid or alg gets a 401 with no injected header line", "[unit]") {
  TestKey key(TestKey::Kind::kEcP256, "k1");
  FakeIssuer issuer;
  issuer.Publish({&key});
  HttpOptions options;
  options.oauth.issuer = issuer.issuer();  // http://127.0.0.1:PORT: loopback, accepted
  options.oauth.jwks_min_refresh = std::chrono::milliseconds(0);
  Served served(options);

  nlohmann::json claims = {{"iss", issuer.issuer()},
                           {"aud", "http://127.0.0.1:" + std::to_string(served.port()) + "/mcp"},
                           {"sub", "mallory"},
                           {"exp", 4102444800}};
  struct Case {
    const char* what;
    std::string token;
  };
  for (const Case& hostile :
       {Case{"kid", key.Sign(claims, {{"kid", kHostile}})},
        Case{"alg", auth::testing::Compact({{"alg", kHostile}, {"kid", "k1"}}, claims, "c2ln")},
        Case{"typ", key.Sign(claims, {{"typ", kHostile}})}}) {
    INFO(hostile.what);
    std::string answer =
        RawExchange(served.port(), Post("Authorization: Bearer " + hostile.token + "\r\n"));
    INFO(answer);
    REQUIRE(answer.rfind("HTTP/1.1 401 Unauthorized\r\n", 0) == 0);
    CHECK_FALSE(HasHeaderLine(answer, "X-Injected"));
    std::string_view head = RawHead(answer);
    CHECK(head.find("k9") == std::string_view::npos);
    CHECK(answer.find("k9") == std::string::npos);  // nor in the JSON body
    CHECK_THAT(std::string(head), Catch::Contains("WWW-Authenticate: Bearer resource_metadata="));
    CHECK_THAT(std::string(head), Catch::Contains("error=\"invalid_token\""));
    if (std::string_view(hostile.what) == "kid") {
      CHECK_THAT(std::string(head), Catch::Contains("error_description=\"unknown key id\""));
    }
  }
  // A good token still gets in (the refusals above were about the header).
  std::string good =
      RawExchange(served.port(), Post("Authorization: Bearer " + key.Sign(claims) + "\r\n"));
  CHECK(good.rfind("HTTP/1.1 401", 0) != 0);
}

TEST_CASE("downloads: a hostile file type or name never becomes a header line", "[unit]") {
  const std::string session = "sess_0123456789ab";
  HttpOptions options;
  options.read_file = [](const std::string&,
                         const std::string& path) -> sandbox::Result<DownloadedFile> {
    // What a sandbox's agent answers: the type is its word, the name is what code wrote.
    if (path == "/mnt/data/typed.txt") return DownloadedFile{"x", "text/plain\r\nX-Injected: 1"};
    return DownloadedFile{"x", "application/octet-stream"};
  };
  Served served(options);
  // Each link is the server's own (per file, signed), so the request reaches the file and only
  // the answer's header lines are judged.
  for (std::string name : {std::string("typed.txt"), std::string("a\r\nX-Injected: 1.bin"),
                           std::string("a\rX-Injected: 1.bin"), std::string("a\nX-Injected: 1.bin"),
                           std::string("a\x01b\x7f.bin")}) {
    INFO(name);
    std::string link = served.transport->DownloadLink(session, "/mnt/data/" + name);
    REQUIRE(link.rfind("/files/", 0) == 0);
    std::string answer = RawExchange(served.port(), Get(link));
    INFO(answer);
    REQUIRE(answer.rfind("HTTP/1.1 ", 0) == 0);
    CHECK_FALSE(HasHeaderLine(answer, "X-Injected"));
  }
}

TEST_CASE("CORS, Mcp-Session-Id, metrics: hostile request bytes never become a header line",
          "[unit]") {
  HttpOptions options;
  options.allowed_origins = {"*"};  // every Origin is echoed back
  Served served(options);
  // Bare CR and other control bytes inside the fields that are echoed or stored.
  for (std::string fields :
       {std::string("Origin: http://a\rX-Injected: 1\r\n"), std::string("Origin: http://a\x01\r\n"),
        std::string("Origin: http://a\x7f\r\n"),
        std::string("Mcp-Session-Id: mcps_\rX-Injected: 1\r\nMCP-Protocol-Version: 2025-11-25\r\n"),
        std::string("Origin: http://a\r\n X-Injected: 1\r\n")}) {  // obs-fold
    INFO(fields);
    std::string answer = RawExchange(served.port(), Post(fields));
    INFO(answer);
    REQUIRE(answer.rfind("HTTP/1.1 ", 0) == 0);
    CHECK_FALSE(HasHeaderLine(answer, "X-Injected"));
    CHECK(answer.find('\x01') == std::string::npos);
  }
  // An allowed Origin is still echoed.
  std::string echoed = RawExchange(served.port(), Get("/mcp", "Origin: http://ok.example\r\n"));
  CHECK_THAT(echoed, Catch::Contains("Access-Control-Allow-Origin: http://ok.example\r\n"));

  auto listener = MetricsListener::Start({.host = "127.0.0.1", .port = 0});
  REQUIRE(listener);
  for (std::string request : {std::string("GET /metrics\r\nX-Injected: 1 HTTP/1.1\r\n\r\n"),
                              std::string("GET /x\rX-Injected: 1 HTTP/1.1\r\n\r\n"),
                              std::string("PUT\rX-Injected: 1 /metrics HTTP/1.1\r\n\r\n")}) {
    std::string answer = RawExchange((*listener)->port(), request);
    INFO(answer);
    REQUIRE(answer.rfind("HTTP/1.1 ", 0) == 0);
    CHECK_FALSE(HasHeaderLine(RawHead(answer), "X-Injected"));
  }
}

}  // namespace http_header_injection_test
