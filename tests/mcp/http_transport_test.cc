// The Streamable HTTP transport over loopback: sessions, status codes, SSE, guards, downloads.
#include "mcp/http_transport.h"

#include <httplib.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/tool_result.h"

namespace http_transport_test {

using namespace sandbox::mcp;
using namespace std::chrono_literals;

namespace {

constexpr char kInit[] =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

std::vector<Tool> Tools() {
  Tool echo{"echo",
            "Echo",
            "Returns its text, logging first.",
            {{"type", "object"},
             {"properties", {{"text", {{"type", "string"}}}, {"log", {{"type", "boolean"}}}}},
             {"additionalProperties", false}},
            nullptr,
            nullptr,
            [](ToolCall& call, const Json& args) {
              if (args.value("log", false)) call.Log(LogLevel::kWarning, "about to echo");
              ToolResultBuilder result(1 << 20);
              std::string text = args.value("text", "");
              result.AddText(text);
              std::string url = call.DownloadUrl("sess_0123456789ab", "/mnt/data/out dir/a.png");
              result.SetStructured({{"url", url}});
              return result.Build();
            }};
  return {echo};
}

struct HttpFixture {
  Server server{ServerOptions{}, Tools()};
  std::unique_ptr<HttpTransport> transport;
  std::thread serving;
  sandbox::Status served;  // Serve()'s result, checked on the test's thread after the join
  std::unique_ptr<httplib::Client> client;
  std::string last_path;

  explicit HttpFixture(HttpOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    options.max_body_bytes = 64 << 10;
    options.read_file = [this](const std::string& session,
                               const std::string& path) -> sandbox::Result<DownloadedFile> {
      last_path = path;
      if (session != "sess_0123456789ab") {
        return sandbox::Fail(sandbox::ErrorCode::kSessionNotFound, "no such session");
      }
      if (path == "/mnt/data/busy.txt")
        return sandbox::Fail(sandbox::ErrorCode::kSessionBusy, "busy");
      if (path != "/mnt/data/out dir/a.png")
        return sandbox::Fail(sandbox::ErrorCode::kNotFound, "no");
      return DownloadedFile{"\x89PNG-bytes", "image/png"};
    };
    transport = std::make_unique<HttpTransport>(server, options);
    REQUIRE(transport->Bind());
    serving = std::thread([this] { served = transport->Serve(); });
    client = std::make_unique<httplib::Client>("127.0.0.1", transport->port());
    client->set_read_timeout(10, 0);
  }
  ~HttpFixture() {
    transport->Stop();
    serving.join();
    INFO("Serve: " << (served ? std::string("ok") : served.error().message));
    CHECK(served);
  }

  httplib::Headers Headers(const std::string& session = "") {
    httplib::Headers headers = {{"Accept", "application/json, text/event-stream"}};
    if (!session.empty()) {
      headers.emplace("Mcp-Session-Id", session);
      headers.emplace("MCP-Protocol-Version", "2025-11-25");
    }
    return headers;
  }
  httplib::Result Post(const std::string& body, httplib::Headers headers) {
    return client->Post("/mcp", headers, body, "application/json");
  }
  std::string Initialize() {
    auto res = Post(kInit, Headers());
    REQUIRE(res);
    REQUIRE(res->status == 200);
    std::string id = res->get_header_value("Mcp-Session-Id");
    REQUIRE(!id.empty());
    return id;
  }
};

// The JSON messages of an SSE body.
std::vector<Json> SseMessages(const std::string& body) {
  std::vector<Json> messages;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find('\n', pos);
    messages.push_back(Json::parse(body.substr(pos + 6, end - pos - 6)));
    pos = end;
  }
  return messages;
}

}  // namespace

TEST_CASE("http: initialize mints a visible-ASCII session id and answers JSON", "[unit]") {
  HttpFixture f;
  auto res = f.Post(kInit, f.Headers());
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").rfind("application/json", 0) == 0);
  std::string id = res->get_header_value("Mcp-Session-Id");
  CHECK(id.size() == 32);
  for (char c : id) CHECK((c > 0x20 && c < 0x7F));
  CHECK(Json::parse(res->body)["result"]["protocolVersion"] == "2025-11-25");
  // Two initializes, two sessions.
  CHECK(f.Initialize() != id);
}

TEST_CASE("http: session id missing is 400, unknown is 404, DELETE ends a session", "[unit]") {
  HttpFixture f;
  std::string id = f.Initialize();
  const std::string list = R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})";
  CHECK(f.Post(list, f.Headers())->status == 400);
  CHECK(f.Post(list, f.Headers("0123456789abcdef0123456789abcdef"))->status == 404);
  auto ok = f.Post(list, f.Headers(id));
  CHECK(ok->status == 200);
  CHECK(Json::parse(ok->body)["result"]["tools"][0]["name"] == "echo");
  auto notification =
      f.Post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", f.Headers(id));
  CHECK(notification->status == 202);
  CHECK(notification->body.empty());

  httplib::Headers no_session;
  CHECK(f.client->Delete("/mcp", no_session)->status == 400);
  httplib::Headers with_session = {{"Mcp-Session-Id", id}};
  CHECK(f.client->Delete("/mcp", with_session)->status == 200);
  CHECK(f.Post(list, f.Headers(id))->status == 404);
  CHECK(f.client->Delete("/mcp", with_session)->status == 404);
}

TEST_CASE("http: protocol version header is checked, absent means 2025-03-26", "[unit]") {
  HttpFixture f;
  std::string id = f.Initialize();
  const std::string ping = R"({"jsonrpc":"2.0","id":3,"method":"ping"})";
  httplib::Headers bad = {{"Accept", "application/json, text/event-stream"},
                          {"Mcp-Session-Id", id},
                          {"MCP-Protocol-Version", "1999-01-01"}};
  CHECK(f.Post(ping, bad)->status == 400);
  httplib::Headers absent = {{"Accept", "application/json, text/event-stream"},
                             {"Mcp-Session-Id", id}};
  CHECK(f.Post(ping, absent)->status == 200);
}

TEST_CASE("http: Accept, Content-Type, body size and parse errors", "[unit]") {
  HttpFixture f;
  httplib::Headers json_only = {{"Accept", "application/json"}};
  CHECK(f.Post(kInit, json_only)->status == 406);
  auto wrong_type = f.client->Post("/mcp", f.Headers(), kInit, "text/plain");
  CHECK(wrong_type->status == 415);
  auto not_json = f.Post("{nope", f.Headers());
  CHECK(not_json->status == 400);
  CHECK(Json::parse(not_json->body)["error"]["code"] == kParseError);
  CHECK(Json::parse(not_json->body)["id"].is_null());
  auto big = f.Post(std::string(100 << 10, ' ') + kInit, f.Headers());
  CHECK(big->status == 413);
}

TEST_CASE("http: GET /mcp is 405, /healthz answers", "[unit]") {
  HttpFixture f;
  std::string id = f.Initialize();
  httplib::Headers headers = {{"Accept", "text/event-stream"}, {"Mcp-Session-Id", id}};
  auto get = f.client->Get("/mcp", headers);
  CHECK(get->status == 405);
  auto health = f.client->Get("/healthz");
  CHECK(health->status == 200);
  CHECK(Json::parse(health->body)["status"] == "ok");
}

TEST_CASE("http: a tool call without notifications is answered with JSON", "[unit]") {
  HttpFixture f;
  std::string id = f.Initialize();
  auto res = f.Post(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})",
      f.Headers(id));
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").rfind("application/json", 0) == 0);
  Json body = Json::parse(res->body);
  CHECK(body["id"] == 7);
  CHECK(body["result"]["content"][0]["text"] == "hi");
}

TEST_CASE("http: a tool call streams its notifications and response as SSE", "[unit]") {
  HttpFixture f;
  std::string id = f.Initialize();
  auto res = f.Post(
      R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hello","log":true}}})",
      f.Headers(id));
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0);
  auto messages = SseMessages(res->body);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0]["method"] == "notifications/message");
  CHECK(messages[1]["id"] == "c1");
  CHECK(messages[1]["result"]["content"][0]["text"] == "hello");
  std::string url = messages[1]["result"]["structuredContent"]["url"];
  std::string prefix = "http://127.0.0.1:" + std::to_string(f.transport->port()) +
                       "/files/sess_0123456789ab/out%20dir/a.png?expires=";
  CHECK(url.rfind(prefix, 0) == 0);
  // The same link as the transport mints for that file (within the second's tick).
  std::string link = f.transport->DownloadLink("sess_0123456789ab", "/mnt/data/out dir/a.png");
  CHECK(url.substr(url.find("/files/")).size() == link.size());
}

TEST_CASE("http: foreign Host or Origin is 403, own origin passes", "[unit]") {
  HttpFixture f;
  httplib::Headers evil_host = {{"Accept", "application/json, text/event-stream"},
                                {"Host", "evil.example.com"}};
  CHECK(f.Post(kInit, evil_host)->status == 403);
  httplib::Headers evil_origin = {{"Accept", "application/json, text/event-stream"},
                                  {"Origin", "http://evil.example.com"}};
  CHECK(f.Post(kInit, evil_origin)->status == 403);
  std::string own = "http://127.0.0.1:" + std::to_string(f.transport->port());
  httplib::Headers good_origin = {{"Accept", "application/json, text/event-stream"},
                                  {"Origin", own}};
  auto res = f.Post(kInit, good_origin);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Access-Control-Allow-Origin") == own);
  httplib::Headers localhost_origin = {
      {"Accept", "application/json, text/event-stream"},
      {"Origin", "http://localhost:" + std::to_string(f.transport->port())}};
  CHECK(f.Post(kInit, localhost_origin)->status == 200);
}

TEST_CASE("http: configured origins replace the loopback defaults", "[unit]") {
  HttpOptions options;
  options.allowed_origins = {"https://app.example.com"};
  HttpFixture f(options);
  httplib::Headers allowed = {{"Accept", "application/json, text/event-stream"},
                              {"Origin", "https://app.example.com"},
                              {"Host", "app.example.com"}};
  CHECK(f.Post(kInit, allowed)->status == 200);
  httplib::Headers loopback_origin = {
      {"Accept", "application/json, text/event-stream"},
      {"Origin", "http://127.0.0.1:" + std::to_string(f.transport->port())}};
  CHECK(f.Post(kInit, loopback_origin)->status == 403);
}

TEST_CASE("http: a bearer token is required when configured", "[unit]") {
  HttpOptions options;
  options.auth_tokens = {"s3cret-token-value"};
  HttpFixture f(options);
  auto missing = f.Post(kInit, f.Headers());
  CHECK(missing->status == 401);
  CHECK(missing->get_header_value("WWW-Authenticate").rfind("Bearer", 0) == 0);
  auto headers = f.Headers();
  headers.emplace("Authorization", "Bearer wrong");
  CHECK(f.Post(kInit, headers)->status == 401);
  auto good = f.Headers();
  good.emplace("Authorization", "Bearer s3cret-token-value");
  CHECK(f.Post(kInit, good)->status == 200);
}

TEST_CASE("http: a download link opens its one file, under /mnt/data", "[unit]") {
  HttpFixture f;
  std::string link = f.transport->DownloadLink("sess_0123456789ab", "/mnt/data/out dir/a.png");
  REQUIRE(link.rfind("/files/sess_0123456789ab/out%20dir/a.png?expires=", 0) == 0);
  std::string query = link.substr(link.find('?'));
  auto ok = f.client->Get(link.c_str());
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(ok->body == "\x89PNG-bytes");
  CHECK(ok->get_header_value("Content-Type") == "image/png");
  CHECK(ok->get_header_value("X-Content-Type-Options") == "nosniff");
  CHECK(ok->get_header_value("Content-Security-Policy").rfind("sandbox", 0) == 0);
  CHECK(f.last_path == "/mnt/data/out dir/a.png");

  CHECK(f.client->Get("/files/sess_0123456789ab/out%20dir/a.png")->status == 403);
  CHECK(f.client->Get("/files/sess_0123456789ab/out%20dir/a.png?expires=1&token=00")->status ==
        403);
  // The link's query opens neither another session's file of that name nor another file here.
  CHECK(f.client->Get(("/files/sess_ba9876543210/out%20dir/a.png" + query).c_str())->status == 403);
  CHECK(f.client->Get(("/files/sess_0123456789ab/busy.txt" + query).c_str())->status == 403);
  CHECK(f.client->Get(("/files/sess_0123456789ab/../etc/passwd" + query).c_str())->status != 200);
  CHECK(f.client->Get(("/files/sess_0123456789ab/a/%2e%2e/b" + query).c_str())->status == 400);
  std::string missing = f.transport->DownloadLink("sess_0123456789ab", "/mnt/data/missing");
  CHECK(f.client->Get(missing.c_str())->status == 404);
  std::string busy = f.transport->DownloadLink("sess_0123456789ab", "/mnt/data/busy.txt");
  CHECK(f.client->Get(busy.c_str())->status == 409);
}

}  // namespace http_transport_test
