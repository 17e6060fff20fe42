// The typed agent-protocol messages added to messages.h for stat, list, warm, preload, shutdown
// and error, and run_messages.h's run, output, result and cancel: what one side writes, the
// other reads back; a message of the wrong shape reads as defaults instead of throwing (init's
// messages are hostile to the host), and a result whose base64 does not decode is refused.
#include "runtime/agent/run_messages.h"

#include <catch2/catch.hpp>

#include "runtime/agent/messages.h"

namespace run_messages_test {

using namespace sandbox::agent;

TEST_CASE("agent run messages: each reads back what it wrote, type and id included", "[unit]") {
  RunRequestMessage run{.kind = "shell",
                        .code = "ls",
                        .fresh = true,
                        .timeout_s = 2.5,
                        .max_output_bytes = 64,
                        .cwd = "/tmp"};
  Json run_json = run.ToJson(4);
  CHECK(run_json["type"] == "run");
  CHECK(run_json["id"] == 4);
  RunRequestMessage run_back = RunRequestMessage::FromJson(run_json);
  CHECK(run_back.kind == "shell");
  CHECK(run_back.code == "ls");
  CHECK(run_back.fresh);
  CHECK(run_back.timeout_s == 2.5);
  CHECK(run_back.max_output_bytes == 64);
  CHECK(run_back.cwd == "/tmp");

  Json output = OutputEvent{.stream = 2}.ToJson(4);
  CHECK(output == Json{{"type", "output"}, {"id", 4}, {"stream", 2}});
  CHECK(OutputEvent::FromJson(output).stream == 2);
  CHECK(CancelRequest{}.ToJson(4) == Json{{"type", "cancel"}, {"id", 4}});

  RunResultMessage result;
  result.exit_code = 137;
  result.stdout_bytes = std::string("a\0b\xff", 4);  // raw bytes, not text
  result.stderr_bytes = "Traceback";
  result.stderr_truncated = true;
  result.timed_out = true;
  result.state_lost = true;
  result.worker_killed = true;
  result.term_signal = 9;
  result.duration_s = 1.25;
  result.artifacts = {EntryMessage{
      .path = "/mnt/data/a.csv", .size = 3, .mime = "text/csv", .mtime_ms = 17, .is_dir = false}};
  result.figures = {FigureMessage{.path = "/mnt/data/figure_1.png", .png = "\x89PNG"}};
  result.data_bytes = 4096;
  result.preload_pending = true;
  Json result_json = result.ToJson(4);
  CHECK(result_json["type"] == "result");
  CHECK(result_json["id"] == 4);
  CHECK_FALSE(result_json["artifacts"][0].contains("is_dir"));  // artifacts are files
  CHECK_FALSE(result_json["disk"].contains("tmp_bytes"));       // no tmpfs: left out
  auto back = RunResultMessage::FromJson(result_json);
  REQUIRE(back);
  CHECK(back->exit_code == 137);
  CHECK(back->stdout_bytes == std::string("a\0b\xff", 4));
  CHECK(back->stderr_bytes == "Traceback");
  CHECK_FALSE(back->stdout_truncated);
  CHECK(back->stderr_truncated);
  CHECK(back->timed_out);
  CHECK_FALSE(back->cancelled);
  CHECK(back->state_lost);
  CHECK(back->worker_killed);
  CHECK(back->term_signal == 9);
  CHECK(back->duration_s == 1.25);
  REQUIRE(back->artifacts.size() == 1);
  CHECK(back->artifacts[0].path == "/mnt/data/a.csv");
  CHECK(back->artifacts[0].mime == "text/csv");
  CHECK(back->artifacts[0].mtime_ms == 17);
  REQUIRE(back->figures.size() == 1);
  CHECK(back->figures[0].png == "\x89PNG");
  CHECK(back->data_bytes == uint64_t{4096});
  CHECK_FALSE(back->tmp_bytes);
  CHECK(back->preload_pending == true);
  result.preload_pending.reset();  // an agent without a preload says nothing
  CHECK_FALSE(result.ToJson(5).contains("preload_pending"));
}

TEST_CASE("agent messages: stat, list, warm, preload, shutdown and error read back", "[unit]") {
  CHECK(StatRequest{.path = "a"}.ToJson(3) == Json{{"type", "stat"}, {"id", 3}, {"path", "a"}});
  CHECK(StatRequest::FromJson(StatRequest{.path = "a"}.ToJson(3)).path == "a");
  EntryMessage dir{.path = "/mnt/data/d", .size = 0, .mime = "", .mtime_ms = 5, .is_dir = true};
  Json info = InfoAnswer{.entry = dir}.ToJson(3);
  CHECK(info["type"] == "info");
  auto info_back = InfoAnswer::FromJson(info);
  REQUIRE(info_back);
  CHECK(info_back->entry.is_dir);
  CHECK(info_back->entry.path == "/mnt/data/d");

  Json list = ListRequest{.path = "d", .recursive = true}.ToJson(6);
  CHECK(list["type"] == "list");
  CHECK(ListRequest::FromJson(list).recursive);
  Json entries = EntriesAnswer{.entries = {dir, dir}, .truncated = true}.ToJson(6);
  CHECK(entries["type"] == "entries");
  auto entries_back = EntriesAnswer::FromJson(entries);
  CHECK(entries_back.entries.size() == 2);
  CHECK(entries_back.truncated);

  CHECK(WarmRequest{}.ToJson(7) == Json{{"type", "warm"}, {"id", 7}});
  Json warm = WarmAnswer{.imported = {"numpy", "pandas"}, .failed = {"scipy: no module"}}.ToJson(7);
  CHECK(warm["type"] == "warm");
  auto warm_back = WarmAnswer::FromJson(warm);
  CHECK(warm_back.imported == std::vector<std::string>{"numpy", "pandas"});
  CHECK(warm_back.failed == std::vector<std::string>{"scipy: no module"});
  CHECK(PreloadRequest{}.ToJson(8) == Json{{"type", "preload"}, {"id", 8}});
  CHECK(ShutdownRequest{}.ToJson(9) == Json{{"type", "shutdown"}, {"id", 9}});

  Json error = ErrorMessage{.code = "not_found", .message = "no such file"}.ToJson(10);
  CHECK(error ==
        Json{{"type", "error"}, {"id", 10}, {"code", "not_found"}, {"message", "no such file"}});
  CHECK(ErrorMessage::FromJson(error).code == "not_found");
}

TEST_CASE("agent run messages: the wrong shape reads as defaults, bad base64 is refused",
          "[unit]") {
  Json garbage{{"kind", 3},
               {"code", Json::array()},
               {"timeout_s", "60"},
               {"stream", "1"},
               {"exit_code", "0"},
               {"artifacts", "none"},
               {"figures", Json::array({1, 2})},
               {"disk", "full"},
               {"preload_pending", "yes"},
               {"entry", "x"},
               {"entries", Json::array({Json{{"path", 1}}})},
               {"imported", Json::array({1, "json"})},
               {"truncated", "yes"},
               {"message", 7}};
  RunRequestMessage run = RunRequestMessage::FromJson(garbage);
  CHECK(run.kind == "python");
  CHECK(run.code.empty());
  CHECK(run.timeout_s == 60);
  CHECK(run.max_output_bytes == 100 << 10);
  CHECK(OutputEvent::FromJson(garbage).stream == 0);  // neither stdout nor stderr: dropped
  auto result = RunResultMessage::FromJson(garbage);
  REQUIRE(result);
  CHECK(result->exit_code == 0);
  CHECK(result->artifacts.empty());
  CHECK(result->figures.size() == 2);  // entries of no shape: empty paths, no bytes
  CHECK(result->figures[0].png.empty());
  CHECK_FALSE(result->data_bytes);
  CHECK_FALSE(result->preload_pending);
  CHECK_FALSE(InfoAnswer::FromJson(garbage));
  CHECK(EntriesAnswer::FromJson(garbage).entries.size() == 1);
  CHECK_FALSE(EntriesAnswer::FromJson(garbage).truncated);
  CHECK(WarmAnswer::FromJson(garbage).imported == std::vector<std::string>{"json"});
  CHECK(ErrorMessage::FromJson(garbage).message.empty());
  for (const Json& not_an_object : {Json::array(), Json(nullptr), Json("result")}) {
    CHECK(RunRequestMessage::FromJson(not_an_object).kind == "python");
    CHECK(RunResultMessage::FromJson(not_an_object));
    CHECK_FALSE(InfoAnswer::FromJson(not_an_object));
    CHECK(EntriesAnswer::FromJson(not_an_object).entries.empty());
  }
  CHECK_FALSE(RunResultMessage::FromJson(Json{{"stdout", "not base64!"}}));
  CHECK_FALSE(RunResultMessage::FromJson(Json{{"stderr", 5}}));
  CHECK_FALSE(RunResultMessage::FromJson(
      Json{{"figures", Json::array({Json{{"path", "/f.png"}, {"png", "%%"}}})}}));
}

}  // namespace run_messages_test
