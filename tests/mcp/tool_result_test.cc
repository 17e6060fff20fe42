// Building tool results: the byte budget, error shape, sandbox:// URIs, progress messages.
#include "mcp/tool_result.h"

#include <chrono>

#include <catch2/catch.hpp>

#include "mcp/jsonrpc.h"
#include "mcp/progress.h"

namespace tool_result_test {

using namespace sandbox::mcp;
using sandbox::ErrorCode;

TEST_CASE("a result within budget is left whole, text first", "[unit]") {
  ToolResultBuilder builder(1 << 20);
  builder.AddText("summary");
  builder.AddImage(std::string(100, 'x'), "image/png", std::nullopt);
  builder.SetStructured({{"session_id", "sess_0123456789ab"}});
  Json result = builder.Build();
  REQUIRE(result["content"].size() == 2);
  CHECK(result["content"][0]["type"] == "text");
  CHECK(result["content"][1]["type"] == "image");
  CHECK(result["content"][1]["mimeType"] == "image/png");
  CHECK(result["structuredContent"]["session_id"] == "sess_0123456789ab");
  CHECK_FALSE(result.contains("isError"));
}

TEST_CASE("images that do not fit become resource links with a note", "[unit]") {
  ToolResultBuilder builder(20000);
  builder.AddText("summary");
  ResultFile file{"sess_0123456789ab", "/mnt/data/big chart.png", "image/png", 60000,
                  "http://127.0.0.1:8080/files/x"};
  builder.AddImage(std::string(60000, 'x'), "image/png", file);
  builder.AddImage(std::string(1000, 'y'), "image/png", std::nullopt);
  Json result = builder.Build();
  CHECK(Serialize(result).size() <= 20000);
  bool has_small_image = false, has_link = false;
  for (const auto& block : result["content"]) {
    if (block["type"] == "image") has_small_image = true;
    if (block["type"] == "resource_link") {
      has_link = true;
      CHECK(block["uri"] == "sandbox://sessions/sess_0123456789ab/files/big%20chart.png");
      CHECK(block["name"] == "big chart.png");
      CHECK(block["size"] == 60000);
    }
  }
  CHECK(has_small_image);
  CHECK(has_link);
  CHECK(result["content"][0]["text"].get<std::string>().find("SANDBOX_MAX_RESULT_BYTES") !=
        std::string::npos);
}

TEST_CASE("text beyond the budget is cut with a note", "[unit]") {
  ToolResultBuilder builder(10000);
  builder.AddText("head");
  builder.AddText(std::string(50000, 'a') + "\xC3\xA9");
  Json result = builder.Build();
  std::string line = Serialize(result);
  CHECK(line.size() <= 10000);
  CHECK(result["content"][1]["text"].get<std::string>().find("cut: the result limit") !=
        std::string::npos);
  CHECK(sandbox::ValidUtf8(result["content"][1]["text"].get<std::string>()) ==
        result["content"][1]["text"].get<std::string>());
}

TEST_CASE("tool errors carry the code, a message and isError", "[unit]") {
  Json error =
      ToolError(ErrorCode::kSessionBusy, "session sess_x is running", {{"session_id", "sess_x"}});
  CHECK(error["isError"] == true);
  CHECK(error["content"][0]["type"] == "text");
  CHECK(error["content"][0]["text"] == "Error (session_busy): session sess_x is running");
  CHECK(error["structuredContent"]["error"] == "session_busy");
  CHECK(error["structuredContent"]["message"] == "session sess_x is running");
  CHECK(error["structuredContent"]["session_id"] == "sess_x");
  Json from_error = ToolError(sandbox::MakeError(ErrorCode::kTimeout, "took {} s", 3));
  CHECK(from_error["structuredContent"]["error"] == "timeout");
}

TEST_CASE("sandbox URIs round-trip and refuse what is not one", "[unit]") {
  std::string uri = SandboxUri("sess_0123456789ab", "/mnt/data/a b/ü?.csv");
  auto parsed = ParseSandboxUri(uri);
  REQUIRE(parsed);
  CHECK(parsed->first == "sess_0123456789ab");
  CHECK(parsed->second == "/mnt/data/a b/ü?.csv");
  CHECK(uri == "sandbox://sessions/sess_0123456789ab/files/a%20b/%C3%BC%3F.csv");
  CHECK(SandboxUri("sess_x", "/tmp/t.txt") == "sandbox://sessions/sess_x/files//tmp/t.txt");
  auto tmp = ParseSandboxUri("sandbox://sessions/sess_x/files//tmp/t.txt");
  REQUIRE(tmp);
  CHECK(tmp->second == "/tmp/t.txt");
  CHECK_FALSE(ParseSandboxUri("file:///etc/passwd"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sess_x/mnt/data/a"));  // the first release's form
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/a%2"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/a%00b"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/a?b"));
  // Escapes and second spellings of one file are not URIs of ours.
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/../../etc/passwd"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/a/%2E%2E/b"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/a//b"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files/a/"));
  CHECK_FALSE(ParseSandboxUri("sandbox://sessions/sess_x/files//mnt/data/a"));
}

TEST_CASE("text types are recognised", "[unit]") {
  CHECK(IsTextMime("text/csv"));
  CHECK(IsTextMime("application/json"));
  CHECK(IsTextMime("application/geo+json"));
  CHECK_FALSE(IsTextMime("image/png"));
  CHECK_FALSE(IsTextMime("application/octet-stream"));
}

TEST_CASE("a progress message is the last line of output", "[unit]") {
  CHECK(ProgressMessage("a\nb\nepoch 3/10 loss 0.2\n\n") == "epoch 3/10 loss 0.2");
  CHECK(ProgressMessage("") == "");
  CHECK(ProgressMessage(std::string(500, 'x'), 100).size() == 100);
  CHECK(ProgressMessage("tail \xE2\x82\xAC", 3) == "\xE2\x82\xAC");
}

TEST_CASE("5 000 figures are decided in one pass and the result stays under the cap", "[unit]") {
  // A cell that forges the worker's figure list once made the builder drop images one at a
  // time, serialising the whole result after each: 3 400 figures took about a minute of server
  // CPU (issue #12). The bound here is generous; the linear builder takes milliseconds.
  constexpr size_t kMax = 1 << 20;
  ToolResultBuilder builder(kMax);
  builder.AddText("exit_code: 0");
  std::string png(2000, 'p');
  for (int i = 0; i < 5000; ++i) {
    ResultFile file{"sess_0123456789ab", "/mnt/data/figure_" + std::to_string(i) + ".png",
                    "image/png", png.size(), ""};
    builder.AddImage(png, "image/png", file);
  }
  Json structured = {{"figures", Json::array()}};
  builder.SetStructured(structured);
  auto start = std::chrono::steady_clock::now();
  Json result = builder.Build();
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < std::chrono::seconds(5));
  size_t size = Serialize(result).size();
  CHECK(size <= kMax);
  size_t images = 0, links = 0;
  for (const auto& block : result["content"]) {
    if (block["type"] == "image") ++images;
    if (block["type"] == "resource_link") ++links;
  }
  CHECK(images > 0);
  CHECK(images < 5000);
  const std::string& text = result["content"][0]["text"].get_ref<const std::string&>();
  // Named notes are bounded; the rest are counted in one line.
  CHECK(text.find("more file(s) left out") != std::string::npos);
  CHECK(text.size() < 8192);
  INFO("images " << images << ", links " << links << ", bytes " << size);
}

TEST_CASE("left-out images are linked only while links fit", "[unit]") {
  ToolResultBuilder builder(4000);
  builder.AddText("summary");
  for (int i = 0; i < 200; ++i) {
    ResultFile file{"sess_0123456789ab", "/mnt/data/f" + std::to_string(i) + ".png", "image/png",
                    5000, ""};
    builder.AddImage(std::string(5000, 'x'), "image/png", file);
  }
  Json result = builder.Build();
  CHECK(Serialize(result).size() <= 4000);
  CHECK(result["content"][0]["text"].get<std::string>().find("without a link") !=
        std::string::npos);
}

}  // namespace tool_result_test
