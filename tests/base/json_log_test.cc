// SANDBOX_LOG_FORMAT=json: every line one JSON object with time, level, event and the message,
// whatever the message holds, and the structured fields of the scope it was logged in.
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "runtime/base/log_fields.h"
#include "runtime/base/logging.h"
#include "tests/support/test_support.h"

namespace sandbox::json_log_test {
namespace {

std::vector<nlohmann::json> ParsedLines(const std::string& path) {
  spdlog::default_logger()->flush();
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line)) {
    INFO(line);
    REQUIRE(nlohmann::json::accept(line));
    lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST_CASE("json logs: one object a line, the scope's fields in each [unit]", "[unit]") {
  auto previous = spdlog::default_logger();
  testing::TempDir dir;
  std::string path = dir.Join("log.jsonl");
  REQUIRE(InitLogging({.level = "info", .file = path, .format = "json", .replica = "r7"}));
  spdlog::info("plain line");
  {
    ScopedLogFields call({.event = "",
                          .session_id = "sess_r7_0123",
                          .tool = "sandbox_run_python",
                          .request_id = "42",
                          .traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                          .duration_ms = std::nullopt,
                          .outcome = ""});
    spdlog::warn("quote \" backslash \\ newline \n tab \t and bad UTF-8 \xff\xfe end");
    {
      ScopedLogFields event({.event = "tool_call",
                             .session_id = "",
                             .tool = "",
                             .request_id = "",
                             .traceparent = "",
                             .duration_ms = 12.34,
                             .outcome = "timeout"});
      spdlog::info("tool_call done");
    }
    spdlog::info("after the event");
  }
  spdlog::info("outside");
  auto lines = ParsedLines(path);
  REQUIRE(lines.size() == 5);
  for (const auto& line : lines) {
    CHECK(line["time"].is_string());
    CHECK(line["level"].is_string());
    CHECK(line["event"].is_string());
    CHECK(line["replica"] == "r7");
    CHECK(line["pid"].is_number_integer());
  }
  CHECK(lines[0]["msg"] == "plain line");
  CHECK(lines[0]["event"] == "log");
  CHECK_FALSE(lines[0].contains("session_id"));
  CHECK(lines[1]["level"] == "warning");
  CHECK(lines[1]["msg"].get<std::string>().rfind("quote \" backslash \\ newline \n tab", 0) == 0);
  CHECK(lines[1]["tool"] == "sandbox_run_python");
  CHECK(lines[1]["request_id"] == "42");
  CHECK(lines[1]["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  CHECK(lines[2]["event"] == "tool_call");
  CHECK(lines[2]["session_id"] == "sess_r7_0123");  // the outer scope's, kept
  CHECK(lines[2]["duration_ms"] == Approx(12.3));
  CHECK(lines[2]["outcome"] == "timeout");
  CHECK(lines[3]["event"] == "log");  // the event's scope ended
  CHECK_FALSE(lines[3].contains("outcome"));
  CHECK(lines[3]["tool"] == "sandbox_run_python");
  CHECK_FALSE(lines[4].contains("tool"));  // the call's scope ended
  // Dropping the default logger leaves spdlog with none: the next log call of a later case (or of
  // a thread such as the heap trimmer's) would crash. So the one before comes back.
  spdlog::drop("mcp-sandbox");
  spdlog::set_default_logger(previous);
}

TEST_CASE("json logs: client-given fields are cut to 128 bytes [unit]", "[unit]") {
  auto previous = spdlog::default_logger();
  testing::TempDir dir;
  std::string path = dir.Join("log.jsonl");
  REQUIRE(InitLogging({.level = "info", .file = path, .format = "json", .replica = ""}));
  {
    ScopedLogFields call({.event = "",
                          .session_id = std::string(10000, 's'),
                          .tool = "",
                          .request_id = std::string(10000, '9'),
                          .traceparent = "",
                          .duration_ms = std::nullopt,
                          .outcome = ""});
    spdlog::info("bounded");
  }
  auto lines = ParsedLines(path);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["session_id"].get<std::string>().size() == 128);
  CHECK(lines[0]["request_id"].get<std::string>().size() == 128);
  CHECK_FALSE(lines[0].contains("replica"));
  // Dropping the default logger leaves spdlog with none: the next log call of a later case (or of
  // a thread such as the heap trimmer's) would crash. So the one before comes back.
  spdlog::drop("mcp-sandbox");
  spdlog::set_default_logger(previous);
}

}  // namespace
}  // namespace sandbox::json_log_test
