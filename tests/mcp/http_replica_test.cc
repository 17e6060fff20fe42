// A replica behind a proxy, over loopback HTTP with real sessions (SessionManager on
// HostBackend): /readyz, bearer token rotation, transport ids that name the replica and the
// adoption of another replica's, answers for another replica's session handles, drain, and
// download links under SANDBOX_PUBLIC_URL.
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/http_transport.h"
#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "mcp/tools/sandbox_tools.h"
#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"

namespace sandbox::mcp::http_replica_test {
namespace {

using namespace std::chrono_literals;

constexpr char kNewToken[] = "new-token-0123456789";
constexpr char kOldToken[] = "old-token-0123456789";
constexpr char kInit[] =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
const std::string kHex32 = "0123456789abcdef0123456789abcdef";

// Replica r2 as `serve --http` wires it (tools/cli/cmd_serve.cc), on a free loopback port.
struct Replica {
  std::shared_ptr<sandbox::testing::HostBackend> backend =
      std::make_shared<sandbox::testing::HostBackend>();
  std::unique_ptr<SessionManager> sessions;
  std::unique_ptr<Server> server;
  std::unique_ptr<HttpTransport> transport;
  std::thread serving;
  std::unique_ptr<httplib::Client> client;

  explicit Replica(std::string replica = "r2", std::string public_url = "") {
    SessionConfig config;
    config.default_image = "host";
    config.max_sessions = 2;
    config.replica_id = replica;
    sessions =
        std::make_unique<SessionManager>(config, backend, sandbox::testing::HostImageResolver());
    ToolSettings settings;
    settings.exec_timeout_s = 20;
    settings.max_result_bytes = 256 << 10;
    settings.max_upload_bytes = 1 << 20;
    ServerOptions options;
    options.resources = SandboxResources(*sessions, settings);
    server = std::make_unique<Server>(options, SandboxTools(*sessions, settings));
    HttpOptions http;
    http.host = "127.0.0.1";
    http.port = 0;
    http.auth_tokens = {kNewToken, kOldToken};
    http.replica_id = replica;
    http.public_url = public_url;
    http.read_file = SandboxFileReader(*sessions);
    http.readiness = [this, replica] {
      ReadinessFacts facts;
      facts.draining = sessions->draining();
      facts.sessions = sessions->SessionCount();
      facts.max_sessions = 2;
      facts.replica = replica;
      return facts;
    };
    transport = std::make_unique<HttpTransport>(*server, http);
    REQUIRE(transport->Bind());
    serving = std::thread([this] { (void)transport->Serve(); });
    client = std::make_unique<httplib::Client>("127.0.0.1", transport->port());
    client->set_read_timeout(30, 0);
  }
  ~Replica() {
    transport->Stop();
    serving.join();
    server->Shutdown();
    sessions->CloseAll();
  }

  httplib::Headers Headers(const std::string& transport_id = "",
                           const std::string& token = kNewToken) {
    httplib::Headers headers = {{"Accept", "application/json, text/event-stream"},
                                {"Authorization", "Bearer " + token}};
    if (!transport_id.empty()) {
      headers.emplace("Mcp-Session-Id", transport_id);
      headers.emplace("MCP-Protocol-Version", "2025-11-25");
    }
    return headers;
  }
  httplib::Result Post(const std::string& body, const httplib::Headers& headers) {
    return client->Post("/mcp", headers, body, "application/json");
  }
  std::string Initialize() {
    auto res = Post(kInit, Headers());
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return res->get_header_value("Mcp-Session-Id");
  }
  // tools/call over a 2025 transport session: the JSON-RPC result.
  Json Call(const std::string& transport_id, const std::string& tool, Json arguments) {
    Json request = {{"jsonrpc", "2.0"},
                    {"id", 7},
                    {"method", "tools/call"},
                    {"params", {{"name", tool}, {"arguments", std::move(arguments)}}}};
    auto res = Post(Serialize(request), Headers(transport_id));
    REQUIRE(res);
    REQUIRE(res->status == 200);
    // One JSON body, or an SSE stream (a log notification came first) ending in the response.
    std::string text = res->body;
    if (auto data = text.rfind("data: "); data != std::string::npos) {
      text = text.substr(data + 6, text.find('\n', data) - data - 6);
    }
    auto body = ParseJson(text);
    REQUIRE(body);
    REQUIRE(body->contains("result"));
    return (*body)["result"];
  }
};

}  // namespace

TEST_CASE("replica http: /readyz needs no token, says ready with counts, 404 once draining",
          "[unit]") {
  Replica r;
  auto ready = r.client->Get("/readyz");  // no Authorization
  REQUIRE(ready);
  CHECK(ready->status == 200);
  auto body = ParseJson(ready->body);
  REQUIRE(body);
  CHECK((*body)["status"] == "ready");
  CHECK((*body)["replica"] == "r2");
  CHECK((*body)["sessions"] == 0);
  CHECK((*body)["max_sessions"] == 2);
  CHECK(body->size() == 5);  // counts only: no session ids, no settings

  r.sessions->StartDrain(60s);
  auto draining = r.client->Get("/readyz");
  REQUIRE(draining);
  CHECK(draining->status == 404);
  CHECK((*ParseJson(draining->body))["status"] == "draining");
  // /healthz stays 200 while the process serves.
  auto health = r.client->Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
}

TEST_CASE("replica http: every configured bearer token is accepted, others are not", "[unit]") {
  Replica r;
  for (const char* token : {kNewToken, kOldToken}) {
    INFO(token);
    auto res = r.Post(kInit, r.Headers("", token));
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  auto wrong = r.Post(kInit, r.Headers("", "new-token-012345678"));
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  auto none = r.client->Post("/mcp", {{"Accept", "application/json, text/event-stream"}}, kInit,
                             "application/json");
  REQUIRE(none);
  CHECK(none->status == 401);
}

TEST_CASE("replica http: transport ids name the replica, another replica's is adopted", "[unit]") {
  Replica r;
  std::string own = r.Initialize();
  CHECK(own.rfind("mcps_r2_", 0) == 0);
  CHECK(own.size() == 8 + 32);

  // A 2025 client whose transport session lives on r1 (down, or its body named an r2 session):
  // tools/list and a new session work here without a new initialize.
  std::string foreign = "mcps_r1_" + kHex32;
  auto list = r.Post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", r.Headers(foreign));
  REQUIRE(list);
  CHECK(list->status == 200);
  CHECK(ParseJson(list->body)->at("result").at("tools").size() > 5);
  Json created = r.Call(foreign, "sandbox_create_session", Json::object());
  CHECK_FALSE(created.value("isError", false));
  std::string session = created["structuredContent"]["session_id"];
  CHECK(session.rfind("sess_r2_", 0) == 0);
  CHECK(created["structuredContent"]["replica"] == "r2");
  // The adopted transport session is kept: a second request finds it.
  Json status = r.Call(foreign, "sandbox_session_status", {{"session_id", session}});
  CHECK(status["structuredContent"]["replica"] == "r2");

  // An unknown id of r2's own run is a transport session that ended: 404, as 2025 says.
  std::string this_run = own.substr(8, 8);
  auto ended = r.Post(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})",
                      r.Headers("mcps_r2_" + this_run + kHex32.substr(8)));
  REQUIRE(ended);
  CHECK(ended->status == 404);
  // One of an earlier run of r2 (it restarted under its id, in a rolling update): adopted.
  std::string earlier_run = this_run == "00000000" ? "11111111" : "00000000";
  auto earlier = r.Post(R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})",
                        r.Headers("mcps_r2_" + earlier_run + kHex32.substr(8)));
  REQUIRE(earlier);
  CHECK(earlier->status == 200);
  // So is anything that is not a replica's well-formed id.
  auto malformed = r.Post(R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})",
                          r.Headers("mcps_r1_" + kHex32.substr(2)));
  REQUIRE(malformed);
  CHECK(malformed->status == 404);
}

TEST_CASE("replica http: a single host adopts nothing and keeps its 32-digit transport ids",
          "[unit]") {
  Replica single("");
  std::string id = single.Initialize();
  CHECK(id.size() == 32);
  auto foreign = single.Post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
                             single.Headers("mcps_r1_" + kHex32));
  REQUIRE(foreign);
  CHECK(foreign->status == 404);
}

TEST_CASE(
    "replica http: another replica's handle says replica_unavailable, own unknown says "
    "restarted, /files of another replica is 404",
    "[unit]") {
  Replica r;
  std::string transport = r.Initialize();
  Json foreign = r.Call(transport, "sandbox_run_python",
                        {{"session_id", "sess_r1_" + kHex32}, {"code", "print(1)"}});
  CHECK(foreign["isError"] == true);
  const Json& structured = foreign["structuredContent"];
  CHECK(structured["error"] == "session_not_found");
  CHECK(structured["reason"] == "replica_unavailable");
  CHECK(structured["replica"] == "r1");
  std::string message = structured["message"];
  CHECK(message.find("replica r1") != std::string::npos);
  CHECK(message.find("Create a new session") != std::string::npos);
  CHECK(r.backend->started().empty());  // nothing was started for it

  Json own = r.Call(transport, "sandbox_session_status", {{"session_id", "sess_r2_" + kHex32}});
  CHECK(own["structuredContent"]["error"] == "session_not_found");
  CHECK_FALSE(own["structuredContent"].contains("reason"));
  CHECK(own["structuredContent"]["message"].get<std::string>().find(
            "lost when this replica restarted") != std::string::npos);

  auto file = r.client->Get("/files/sess_r1_" + kHex32 + "/out.txt?token=x");
  REQUIRE(file);
  CHECK(file->status == 404);
}

TEST_CASE("replica http: a drain refuses new sessions, lets open ones go on, closes idle ones",
          "[unit]") {
  Replica r;
  std::string transport = r.Initialize();
  Json created = r.Call(transport, "sandbox_run_python", {{"code", "x = 41"}});
  REQUIRE_FALSE(created.value("isError", false));
  std::string session = created["structuredContent"]["session_id"];

  r.sessions->StartDrain(1500ms);
  Json refused = r.Call(transport, "sandbox_create_session", Json::object());
  CHECK(refused["isError"] == true);
  CHECK(refused["structuredContent"]["error"] == "server_draining");
  CHECK(refused["structuredContent"]["message"].get<std::string>().find(
            "placed on another replica") != std::string::npos);
  // An implicit create (a run without session_id) is a new session too.
  Json implicit = r.Call(transport, "sandbox_run_python", {{"code", "print(1)"}});
  CHECK(implicit["structuredContent"]["error"] == "server_draining");

  // The open session keeps its state while it is used.
  Json run =
      r.Call(transport, "sandbox_run_python", {{"session_id", session}, {"code", "print(x + 1)"}});
  REQUIRE_FALSE(run.value("isError", false));
  CHECK(run["structuredContent"]["stdout"] == "42\n");
  CHECK(r.sessions->SessionCount() == 1);

  // Idle for longer than the drain's idle time-out: closed by the reaper (checked every second).
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (r.sessions->SessionCount() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(r.sessions->SessionCount() == 0);
}

TEST_CASE("replica http: download links use SANDBOX_PUBLIC_URL", "[unit]") {
  Replica r("r2", "https://sandbox.example.com/mcp-2");
  std::string transport = r.Initialize();
  Json run = r.Call(transport, "sandbox_run_python",
                    {{"code", "open('/mnt/data/big.bin', 'wb').write(bytes(300000))"}});
  REQUIRE_FALSE(run.value("isError", false));
  std::string session = run["structuredContent"]["session_id"];
  Json read =
      r.Call(transport, "sandbox_read_artifact", {{"session_id", session}, {"path", "big.bin"}});
  REQUIRE_FALSE(read.value("isError", false));
  std::string url = read["structuredContent"]["download_url"];
  CHECK(url.rfind("https://sandbox.example.com/mcp-2/files/" + session + "/big.bin?expires=", 0) ==
        0);
  CHECK(url.find("&token=") != std::string::npos);
}

}  // namespace sandbox::mcp::http_replica_test
