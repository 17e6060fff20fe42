// The dispatcher in memory: lifecycle, every JSON-RPC edge, logging, progress, cancellation
// and concurrency, with small tools defined here (the sandbox tools are tested end to end).
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/server.h"
#include "mcp/tool_result.h"
#include "tests/mcp/capture_reply.h"

namespace dispatcher_test {

using namespace sandbox::mcp;
using sandbox::mcp::testing::CaptureReply;
using namespace std::chrono_literals;

namespace {

Json Schema(Json properties = Json::object(), Json required = Json::array()) {
  Json schema = {
      {"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) schema["required"] = std::move(required);
  return schema;
}

// Tools that exercise the dispatcher: echo, a log emitter, a slow cancellable one with
// progress, one that throws, one that returns invalid UTF-8.
std::vector<Tool> TestTools(std::atomic<int>* running, std::atomic<int>* max_running,
                            std::atomic<bool>* hook_ran) {
  std::vector<Tool> tools;
  tools.push_back({"echo",
                   "Echo",
                   "Returns its text.",
                   Schema({{"text", {{"type", "string"}}}}, {"text"}),
                   nullptr,
                   {{"readOnlyHint", true}},
                   [](ToolCall&, const Json& args) {
                     ToolResultBuilder result(1 << 20);
                     result.AddText(args["text"].get<std::string>());
                     return result.Build();
                   }});
  tools.push_back({"logs", "Logs", "Logs at debug, info and error.", Schema(), nullptr, nullptr,
                   [](ToolCall& call, const Json&) {
                     call.Log(LogLevel::kDebug, "a debug line");
                     call.Log(LogLevel::kInfo, "an info line");
                     call.Log(LogLevel::kError, "an error line");
                     ToolResultBuilder result(1 << 20);
                     result.AddText("logged");
                     return result.Build();
                   }});
  tools.push_back({"slow", "Slow", "Runs until cancelled or 3 s pass, reporting progress.",
                   Schema({{"ms", {{"type", "integer"}}}}), nullptr, nullptr,
                   [running, max_running, hook_ran](ToolCall& call, const Json& args) {
                     int now = ++*running;
                     int seen = max_running->load();
                     while (now > seen && !max_running->compare_exchange_weak(seen, now)) {
                     }
                     std::atomic<bool> stop{false};
                     auto guard = call.OnCancel([&] {
                       stop = true;
                       *hook_ran = true;
                     });
                     auto progress = call.StartProgress(3);
                     auto deadline = std::chrono::steady_clock::now() +
                                     std::chrono::milliseconds(args.value("ms", 3000));
                     int step = 0;
                     while (!stop && std::chrono::steady_clock::now() < deadline) {
                       if (progress) progress->OnOutput(1, "line " + std::to_string(step++) + "\n");
                       std::this_thread::sleep_for(20ms);
                     }
                     progress.reset();
                     --*running;
                     ToolResultBuilder result(1 << 20);
                     result.AddText(stop ? "stopped" : "done");
                     return result.Build();
                   }});
  tools.push_back({"throws", "Throws", "Fails inside.", Schema(), nullptr, nullptr,
                   [](ToolCall&, const Json&) -> Json { throw std::runtime_error("boom"); }});
  tools.push_back({"badutf8", "Bad UTF-8", "Returns invalid UTF-8.", Schema(), nullptr, nullptr,
                   [](ToolCall&, const Json&) {
                     ToolResultBuilder result(1 << 20);
                     result.AddText("out: \xFF\xFE end");
                     return result.Build();
                   }});
  return tools;
}

struct Fixture {
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::atomic<bool> hook_ran{false};
  Server server{ServerOptions{}, TestTools(&running, &max_running, &hook_ran)};
  std::shared_ptr<Connection> connection = server.NewConnection();

  // Sends one message (as text, like a transport) and waits for the reply to close.
  std::shared_ptr<CaptureReply> Send(const std::string& text, bool wait = true) {
    auto reply = std::make_shared<CaptureReply>();
    connection->Handle(Json::parse(text), reply);
    if (wait) REQUIRE(reply->WaitClosed());
    return reply;
  }
  Json Request(const std::string& text) { return Send(text)->response(); }
  void Initialize(const std::string& version = "2025-11-25") {
    Json response =
        Request(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" +
                version + R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    REQUIRE(response["result"]["protocolVersion"] == version);
    Send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }
};

std::string Call(int id, const std::string& tool, const std::string& args = "{}",
                 const std::string& meta = "") {
  std::string params = R"({"name":")" + tool + R"(","arguments":)" + args;
  if (!meta.empty()) params += R"(,"_meta":)" + meta;
  params += "}";
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":)" +
         params + "}";
}

}  // namespace

TEST_CASE("initialize answers the requested version when supported, else the latest", "[unit]") {
  for (const char* version : {"2025-03-26", "2025-06-18", "2025-11-25"}) {
    Fixture f;
    Json r = f.Request(
        std::string(
            R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")") +
        version + R"(","capabilities":{}}})");
    CHECK(r["result"]["protocolVersion"] == version);
    CHECK(r["result"]["capabilities"]["tools"].is_object());
    CHECK(r["result"]["capabilities"]["logging"].is_object());
    CHECK_FALSE(r["result"]["capabilities"].contains("resources"));  // no reader configured
    CHECK(r["result"]["serverInfo"]["name"] == "mcp-sandbox");
    CHECK(f.connection->protocol_version() == version);
  }
  Fixture f;
  Json r = f.Request(
      R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"1999-01-01"}})");
  CHECK(r["id"] == "init");
  CHECK(r["result"]["protocolVersion"] == "2025-11-25");
  Json bad = f.Request(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}})");
  CHECK(bad["error"]["code"] == kInvalidParams);
}

TEST_CASE("ids are echoed with their exact JSON type", "[unit]") {
  Fixture f;
  CHECK(f.Request(R"({"jsonrpc":"2.0","id":"abc","method":"ping"})")["id"] == "abc");
  Json numeric = f.Request(R"({"jsonrpc":"2.0","id":42,"method":"ping"})");
  CHECK(numeric["id"].is_number_integer());
  CHECK(numeric["id"] == 42);
  Json string_number = f.Request(R"({"jsonrpc":"2.0","id":"42","method":"ping"})");
  CHECK(string_number["id"].is_string());
  CHECK(Serialize(f.Request(R"({"jsonrpc":"2.0","id":-7,"method":"ping"})")).find(R"("id":-7)") !=
        std::string::npos);
}

TEST_CASE("ping answers an empty object", "[unit]") {
  Fixture f;
  Json r = f.Request(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(r["result"] == Json::object());
  CHECK(r["jsonrpc"] == "2.0");
}

TEST_CASE("notifications are never answered", "[unit]") {
  Fixture f;
  f.Initialize();
  for (const char* text :
       {R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
        R"({"jsonrpc":"2.0","method":"ping"})", R"({"jsonrpc":"2.0","method":"no/such/thing"})",
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}})",
        R"({"jsonrpc":"2.0","id":5,"result":{}})"}) {
    auto reply = f.Send(text);
    INFO(text);
    CHECK(reply->messages().empty());
    CHECK(reply->closed() == 1);
  }
}

TEST_CASE("unknown methods get -32601, and server/discover without _meta is malformed", "[unit]") {
  Fixture f;
  // server/discover is a 2026-07-28 method: without its per-request _meta it is invalid params
  // (protocol_era_test.cc covers the well-formed probe).
  Json discover = f.Request(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}})");
  CHECK(discover["error"]["code"] == kInvalidParams);
  CHECK(discover["id"] == 1);
  f.Initialize();
  CHECK(f.Request(R"({"jsonrpc":"2.0","id":2,"method":"bogus/method"})")["error"]["code"] ==
        kMethodNotFound);
  CHECK(f.Request(R"({"jsonrpc":"2.0","id":3,"method":"resources/list"})")["error"]["code"] ==
        kMethodNotFound);  // no resources capability without a reader
}

TEST_CASE("invalid requests get -32600", "[unit]") {
  Fixture f;
  Json r = f.Request(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
  CHECK(r["error"]["code"] == kInvalidRequest);
  CHECK(r["id"].is_null());
  CHECK(f.Request(R"({"id":1,"method":"ping"})")["error"]["code"] == kInvalidRequest);
  CHECK(f.Request(R"(42)")["error"]["code"] == kInvalidRequest);
}

TEST_CASE("invalid params get -32602", "[unit]") {
  Fixture f;
  f.Initialize();
  Json unknown = f.Request(Call(1, "no_such_tool"));
  CHECK(unknown["error"]["code"] == kInvalidParams);
  CHECK(unknown["error"]["message"].get<std::string>().find("no_such_tool") != std::string::npos);
  CHECK(
      f.Request(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}})")["error"]["code"] ==
      kInvalidParams);
  CHECK(
      f.Request(
          R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[1]}})")
          ["error"]["code"] == kInvalidParams);
  CHECK(f.Request(
            R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"x"}})")["error"]
                                                                                        ["code"] ==
        kInvalidParams);
}

TEST_CASE("errors quote a client's method, tool or argument name cut, never whole", "[unit]") {
  Fixture f;
  f.Initialize();
  std::string huge(1 << 20, 'm');
  Json method = f.Request(R"({"jsonrpc":"2.0","id":1,"method":")" + huge + R"("})");
  CHECK(method["error"]["code"] == kMethodNotFound);
  CHECK(Serialize(method).size() < 1024);
  CHECK(method["error"]["message"].get<std::string>().find("(1048576 bytes)") != std::string::npos);
  Json tool = f.Request(Call(2, huge));
  CHECK(tool["error"]["code"] == kInvalidParams);
  CHECK(Serialize(tool).size() < 1024);
  Json argument = f.Request(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":)"
                            R"("echo","arguments":{"text":"x",")" +
                            huge + R"(":1}}})");
  CHECK(argument["result"]["isError"] == true);
  CHECK(Serialize(argument).size() < 1024);
}

TEST_CASE("logging/setLevel takes RFC 5424 levels and filters notifications", "[unit]") {
  Fixture f;
  f.Initialize();
  CHECK(f.Request(
            R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"verbose"}})")
            ["error"]["code"] == kInvalidParams);
  CHECK(
      f.Request(
          R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{}})")["error"]["code"] ==
      kInvalidParams);

  auto levels_of = [](const std::vector<Json>& messages) {
    std::vector<std::string> levels;
    for (const auto& m : messages) {
      if (m.value("method", "") == "notifications/message") {
        levels.push_back(m["params"]["level"]);
        CHECK(m["params"]["data"].is_string());
      }
    }
    return levels;
  };
  // Default threshold: info.
  CHECK(levels_of(f.Send(Call(3, "logs"))->messages()) ==
        std::vector<std::string>{"info", "error"});
  CHECK(f.Request(
            R"({"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug"}})")
            ["result"] == Json::object());
  CHECK(levels_of(f.Send(Call(5, "logs"))->messages()) ==
        std::vector<std::string>{"debug", "info", "error"});
  f.Request(
      R"({"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"critical"}})");
  CHECK(levels_of(f.Send(Call(7, "logs"))->messages()).empty());
}

TEST_CASE("tools/list describes every tool with name, description and schema", "[unit]") {
  Fixture f;
  f.Initialize();
  Json r = f.Request(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  REQUIRE(r["result"]["tools"].size() == 5);
  for (const auto& tool : r["result"]["tools"]) {
    CHECK(tool["name"].is_string());
    CHECK(tool["description"].is_string());
    CHECK(tool["inputSchema"]["type"] == "object");
  }
  CHECK(r["result"]["tools"][0]["annotations"]["readOnlyHint"] == true);
}

TEST_CASE("a tool call returns the tool's result", "[unit]") {
  Fixture f;
  f.Initialize();
  Json r = f.Request(Call(1, "echo", R"({"text":"hi"})"));
  CHECK(r["id"] == 1);
  CHECK(r["result"]["content"][0] == Json({{"type", "text"}, {"text", "hi"}}));
  CHECK_FALSE(r["result"].contains("isError"));
}

TEST_CASE("argument validation failures are tool errors, not protocol errors", "[unit]") {
  Fixture f;
  f.Initialize();
  for (const char* args : {R"({})", R"({"text":5})", R"({"text":"x","extra":1})"}) {
    Json r = f.Request(Call(1, "echo", args));
    INFO(args);
    REQUIRE(r.contains("result"));
    CHECK(r["result"]["isError"] == true);
    CHECK(r["result"]["structuredContent"]["error"] == "invalid_argument");
    CHECK(r["result"]["content"][0]["type"] == "text");
  }
}

TEST_CASE("a tool that throws gives an internal tool error and the server lives on", "[unit]") {
  Fixture f;
  f.Initialize();
  Json r = f.Request(Call(1, "throws"));
  CHECK(r["result"]["isError"] == true);
  CHECK(r["result"]["structuredContent"]["error"] == "internal");
  CHECK(f.Request(R"({"jsonrpc":"2.0","id":2,"method":"ping"})")["result"] == Json::object());
}

TEST_CASE("invalid UTF-8 from a tool is repaired before serialization", "[unit]") {
  Fixture f;
  f.Initialize();
  Json r = f.Request(Call(1, "badutf8"));
  std::string line;
  REQUIRE_NOTHROW(line = Serialize(r));
  CHECK(r["result"]["content"][0]["text"] == "out: \xEF\xBF\xBD\xEF\xBF\xBD end");
}

TEST_CASE("progress notifications flow while a call runs, increasing, then stop", "[unit]") {
  Fixture f;
  f.Initialize();
  auto reply = f.Send(Call(1, "slow", R"({"ms":1300})", R"({"progressToken":"tok"})"));
  auto messages = reply->messages();
  REQUIRE(messages.size() >= 3);
  double last = -1;
  size_t progress_count = 0;
  for (size_t i = 0; i + 1 < messages.size(); ++i) {
    REQUIRE(messages[i]["method"] == "notifications/progress");
    CHECK(messages[i]["params"]["progressToken"] == "tok");
    double progress = messages[i]["params"]["progress"];
    CHECK(progress > last);
    last = progress;
    CHECK(messages[i]["params"]["total"] == 3);
    ++progress_count;
  }
  CHECK(progress_count >= 2);
  // The message is the tail of the output.
  CHECK(messages[messages.size() - 2]["params"]["message"].get<std::string>().rfind("line ", 0) ==
        0);
  // The response comes last: nothing after it.
  CHECK(messages.back()["id"] == 1);
  CHECK(messages.back().contains("result"));
  // Shutdown joins every thread that could still send (the call's, its progress timer's), so
  // what the reply holds now is final: no waiting for a late heartbeat.
  f.server.Shutdown();
  CHECK(reply->messages().size() == messages.size());
  CHECK(reply->sent_after_close() == 0);
}

TEST_CASE("no progress notifications without a progressToken", "[unit]") {
  Fixture f;
  f.Initialize();
  auto reply = f.Send(Call(1, "slow", R"({"ms":300})"));
  CHECK(reply->messages().size() == 1);
}

TEST_CASE("a cancelled request stops its work and gets no response", "[unit]") {
  Fixture f;
  f.Initialize();
  // The call would run 30 s: ending within 10 s of the cancel proves the cancel stopped it.
  auto reply = f.Send(Call(7, "slow", R"({"ms":30000})"), /*wait=*/false);
  auto start = std::chrono::steady_clock::now();
  while (f.running == 0 && std::chrono::steady_clock::now() - start < 5s)
    std::this_thread::sleep_for(5ms);
  REQUIRE(f.running == 1);
  auto cancelled_at = std::chrono::steady_clock::now();
  f.Send(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}})");
  REQUIRE(reply->WaitClosed(10s));
  CHECK(f.hook_ran);
  CHECK(reply->response().is_null());
  CHECK(std::chrono::steady_clock::now() - cancelled_at < 10s);
}

TEST_CASE("cancelling an id of the other JSON type does nothing", "[unit]") {
  Fixture f;
  f.Initialize();
  auto reply = f.Send(Call(8, "slow", R"({"ms":400})"), /*wait=*/false);
  f.Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"8"}})");
  REQUIRE(reply->WaitClosed());
  CHECK(reply->response()["id"] == 8);
  CHECK_FALSE(f.hook_ran);
}

TEST_CASE("ping is answered while a tool runs, and calls run concurrently", "[unit]") {
  Fixture f;
  f.Initialize();
  auto first = f.Send(Call(1, "slow", R"({"ms":5000})"), false);
  auto second = f.Send(Call(2, "slow", R"({"ms":5000})"), false);
  auto start = std::chrono::steady_clock::now();
  Json pong = f.Request(R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  CHECK(pong["result"] == Json::object());
  // Far less than the 5 s the calls take, with room for a loaded machine.
  CHECK(std::chrono::steady_clock::now() - start < 2000ms);
  CHECK(first->closed() == 0);
  REQUIRE(first->WaitClosed());
  REQUIRE(second->WaitClosed());
  CHECK(f.max_running == 2);
}

TEST_CASE("an id already in flight is refused", "[unit]") {
  Fixture f;
  f.Initialize();
  auto first = f.Send(Call(1, "slow", R"({"ms":500})"), false);
  Json dup = f.Request(Call(1, "echo", R"({"text":"x"})"));
  CHECK(dup["error"]["code"] == kInvalidRequest);
  REQUIRE(first->WaitClosed());
  CHECK(first->response().contains("result"));
}

TEST_CASE("CancelAll drops every request in flight", "[unit]") {
  Fixture f;
  f.Initialize();
  // The calls would run 30 s: closing within 10 s proves CancelAll ended them.
  auto a = f.Send(Call(1, "slow", R"({"ms":30000})"), false);
  auto b = f.Send(Call(2, "slow", R"({"ms":30000})"), false);
  auto start = std::chrono::steady_clock::now();
  while (f.running < 2 && std::chrono::steady_clock::now() - start < 5s)
    std::this_thread::sleep_for(5ms);
  f.connection->CancelAll();
  REQUIRE(a->WaitClosed(10s));
  REQUIRE(b->WaitClosed(10s));
  CHECK(a->response().is_null());
  CHECK(b->response().is_null());
}

TEST_CASE("batches are refused unless 2025-03-26 was negotiated", "[unit]") {
  SECTION("before initialize") {
    Fixture f;
    Json r = f.Request(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
    CHECK(r["error"]["code"] == kInvalidRequest);
    CHECK(r["id"].is_null());
  }
  SECTION("2025-06-18 and later") {
    for (const char* version : {"2025-06-18", "2025-11-25"}) {
      Fixture f;
      f.Initialize(version);
      Json r = f.Request(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
      CHECK(r["error"]["code"] == kInvalidRequest);
    }
  }
}

TEST_CASE("2025-03-26 batches are answered with one array", "[unit]") {
  Fixture f;
  f.Initialize("2025-03-26");
  auto reply = f.Send(R"([
    {"jsonrpc":"2.0","id":1,"method":"ping"},
    {"jsonrpc":"2.0","method":"notifications/initialized"},
    {"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}},
    {"jsonrpc":"2.0","id":3,"method":"nope"},
    {"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},
    17
  ])");
  auto messages = reply->messages();
  REQUIRE(messages.size() == 1);
  Json batch = messages[0];
  REQUIRE(batch.is_array());
  REQUIRE(batch.size() == 5);  // the notification gets nothing
  std::map<std::string, Json> by_id;
  for (const auto& r : batch) by_id[r["id"].dump()] = r;
  CHECK(by_id["1"]["result"] == Json::object());
  CHECK(by_id[R"("b")"]["result"]["content"][0]["text"] == "x");
  CHECK(by_id["3"]["error"]["code"] == kMethodNotFound);
  CHECK(by_id["4"]["error"]["code"] == kInvalidRequest);
  CHECK(by_id["null"]["error"]["code"] == kInvalidRequest);
  CHECK(f.Request("[]")["error"]["code"] == kInvalidRequest);
  // A batch of notifications only: nothing comes back.
  CHECK(f.Send(R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])")->messages().empty());
}

TEST_CASE("odd JSON types in params never take the server down", "[unit]") {
  Fixture f;
  const char* messages[] = {
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":5,"version":[1]}}})",
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":7}})",
      R"({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":5}})",
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":5}})",
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":["echo"]}})",
      R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":{"a":1}}}})",
      R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":{}}})",
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":[]}}})",
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})",
      R"({"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":null}})",
  };
  for (const char* text : messages) {
    INFO(text);
    auto reply = f.Send(text);
    Json response = reply->response();
    if (response.is_object()) {
      CHECK((response.contains("result") || response.contains("error")));
    }
  }
  CHECK(f.Request(R"({"jsonrpc":"2.0","id":9,"method":"ping"})")["result"] == Json::object());
}

}  // namespace dispatcher_test
