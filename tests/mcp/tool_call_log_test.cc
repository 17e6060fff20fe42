// The one tool_call log line per call: written once the response is sent (the client does not
// wait for the log), still at info level with what the call said and the call's own fields, and
// not at all when the logger does not show info lines.
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "mcp/server.h"
#include "mcp/tool_result.h"
#include "runtime/base/after_reply.h"
#include "runtime/base/logging.h"
#include "tests/support/log_capture.h"
#include "tests/support/test_support.h"

namespace sandbox::mcp::tool_call_log_test {
namespace {

using namespace std::chrono_literals;

// A tool whose result names a session and an exit code, as sandbox_run_python's does.
std::vector<Tool> RunLikeTool() {
  Json schema = {{"type", "object"},
                 {"properties", {{"session_id", {{"type", "string"}}}}},
                 {"additionalProperties", false}};
  return {{"run_like", "Run-like", "Says it ran.", schema, nullptr, nullptr,
           [](ToolCall&, const Json&) {
             ToolResultBuilder result(1 << 20);
             result.AddText("ran");
             result.SetStructured({{"session_id", "sess_log_0001"}, {"exit_code", 3}});
             return result.Build();
           }}};
}

// Records, when the response is sent, whether the log already held a tool_call line.
class LogCheckingReply : public Reply {
 public:
  explicit LogCheckingReply(std::function<bool()> logged) : logged_(std::move(logged)) {}
  void Send(const Json& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!message.contains("method")) logged_before_response_ = logged_();
    sent_ = true;
  }
  void Close() override {}
  bool sent() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_;
  }
  bool logged_before_response() {
    std::lock_guard<std::mutex> lock(mutex_);
    return logged_before_response_;
  }

 private:
  std::function<bool()> logged_;
  std::mutex mutex_;
  bool sent_ = false;
  bool logged_before_response_ = false;
};

const char* kCall =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_like","arguments":{}}})";

// Sends one call and waits until the response went out and `done` holds (or 10 s pass).
std::shared_ptr<LogCheckingReply> CallAndWait(Connection& connection,
                                              const std::function<bool()>& logged,
                                              const std::function<bool()>& done) {
  auto reply = std::make_shared<LogCheckingReply>(logged);
  connection.Handle(Json::parse(kCall), reply);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!(reply->sent() && done()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  return reply;
}

TEST_CASE("tool_call log line: at info, after the response, with the call's outcome [unit]",
          "[unit]") {
  sandbox::testing::LogCapture log(spdlog::level::info);
  Server server{ServerOptions{}, RunLikeTool()};
  auto connection = server.NewConnection();
  auto logged = [&log] { return log.Text().find("tool_call") != std::string::npos; };
  auto reply = CallAndWait(*connection, logged, logged);
  REQUIRE(reply->sent());
  std::string text = log.Text();
  INFO(text);
  CHECK(text.find("info tool_call tool=run_like session='sess_log_0001' duration_ms=") !=
        std::string::npos);
  CHECK(text.find("outcome=ok exit_code=3") != std::string::npos);
  // The line is written once the response has gone out, not before it.
  CHECK_FALSE(reply->logged_before_response());
}

TEST_CASE(
    "tool_call log line: a call answered on the caller's thread logs after the caller's "
    "write [unit]",
    "[unit]") {
  sandbox::testing::LogCapture log(spdlog::level::info);
  Server server{ServerOptions{}, RunLikeTool()};
  auto connection = server.NewConnection();
  // As HTTP answers initialize and 2026-07-28 requests: on the request's own thread, which
  // writes the response after Handle returns, inside an AfterReply scope of its own.
  connection->set_run_inline(true);
  auto logged = [&log] { return log.Text().find("tool_call") != std::string::npos; };
  {
    AfterReply request_scope;
    auto reply = std::make_shared<LogCheckingReply>(logged);
    connection->Handle(Json::parse(kCall), reply);
    REQUIRE(reply->sent());
    CHECK_FALSE(logged());  // the caller has not written the response yet
  }
  CHECK(logged());
}

TEST_CASE("tool_call log line: none when the logger shows warnings only [unit]", "[unit]") {
  sandbox::testing::LogCapture log(spdlog::level::warn);
  Server server{ServerOptions{}, RunLikeTool()};
  auto connection = server.NewConnection();
  auto logged = [&log] { return log.Text().find("tool_call") != std::string::npos; };
  // A second call after the first: its response means the first's work is over.
  CallAndWait(*connection, logged, [] { return true; });
  auto reply = CallAndWait(*connection, logged, [] { return true; });
  REQUIRE(reply->sent());
  server.Shutdown();  // every task, and what runs after its reply, is done
  CHECK(log.Text().find("tool_call") == std::string::npos);
}

TEST_CASE("tool_call log line: JSON keeps the call's request id and tool [unit]", "[unit]") {
  auto previous = spdlog::default_logger();
  sandbox::testing::TempDir dir;
  std::string path = dir.Join("log.jsonl");
  REQUIRE(InitLogging({.level = "info", .file = path, .format = "json", .replica = "r3"}));
  auto tool_call_line = [&path]() -> Json {
    spdlog::default_logger()->flush();
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (!nlohmann::json::accept(line)) continue;
      Json parsed = Json::parse(line);
      if (parsed.value("event", "") == "tool_call") return parsed;
    }
    return nullptr;
  };
  {
    Server server{ServerOptions{}, RunLikeTool()};
    auto connection = server.NewConnection();
    auto logged = [&] { return !tool_call_line().is_null(); };
    REQUIRE(CallAndWait(*connection, logged, logged)->sent());
  }
  Json line = tool_call_line();
  spdlog::set_default_logger(previous);
  INFO(line.dump());
  REQUIRE(line.is_object());
  CHECK(line["tool"] == "run_like");
  CHECK(line["request_id"] == "7");
  CHECK(line["session_id"] == "sess_log_0001");
  CHECK(line["outcome"] == "ok");
  CHECK(line["duration_ms"].is_number());
}

}  // namespace
}  // namespace sandbox::mcp::tool_call_log_test
