// soak_client: N MCP clients over Streamable HTTP call one `serve --http` continuously for a
// given time — runs (Python and shell), uploads, reads back, listings, session creates and
// closes, one-shot runs — and check every answer, not only that one came: the session keeps its
// variables between runs, a file reads back as it was uploaded. Prints calls, errors and
// latency percentiles per tool as a markdown table, and the first errors in full.
// tools/soak runs it and samples the server's resources meanwhile.
//
// usage: soak_client URL [--clients N] [--seconds S]
// Exit status: 0 with no error, 1 otherwise, 2 on bad usage.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/base64.h"
#include "tests/support/bench_stats.h"
#include "tests/support/mcp_http_client.h"

namespace {

using nlohmann::json;
using sandbox::testing::BenchClock;
using sandbox::testing::McpHttpClient;
using sandbox::testing::Ms;
using sandbox::testing::Percentile;

// Per-tool latencies and errors, shared by the client threads.
class Tally {
 public:
  void Record(const std::string& op, double ms, const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    Op& entry = ops_[op];
    entry.latencies.push_back(ms);
    if (error.empty()) return;
    ++entry.errors;
    if (first_errors_.size() < 10) first_errors_.push_back(op + ": " + error);
  }

  int Print() {
    std::lock_guard<std::mutex> lock(mutex_);
    int errors = 0;
    size_t calls = 0;
    std::printf(
        "| call | calls | errors | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n");
    for (const auto& [op, entry] : ops_) {
      std::printf("| %s | %zu | %d | %.1f | %.1f | %.1f |\n", op.c_str(), entry.latencies.size(),
                  entry.errors, Percentile(entry.latencies, 0.5), Percentile(entry.latencies, 0.99),
                  Percentile(entry.latencies, 1.0));
      errors += entry.errors;
      calls += entry.latencies.size();
    }
    std::printf("\n%zu calls, %d error(s).\n", calls, errors);
    for (const auto& line : first_errors_) std::printf("error: %s\n", line.c_str());
    return errors;
  }

 private:
  struct Op {
    std::vector<double> latencies;
    int errors = 0;
  };
  std::mutex mutex_;
  std::map<std::string, Op> ops_;
  std::vector<std::string> first_errors_;
};

// Why a tools/call response is not a success ("" when it is).
std::string CallError(const McpHttpClient& client, const json& response) {
  if (response.is_null()) {
    return "HTTP " + std::to_string(client.status()) + " " + client.error();
  }
  if (response.contains("error")) return response["error"].dump();
  const json& result = response.value("result", json::object());
  if (result.value("isError", false)) return result.dump().substr(0, 400);
  return "";
}

std::string Structured(const json& response, const std::string& field) {
  const json& result = response.value("result", json::object());
  const json& structured = result.value("structuredContent", json::object());
  if (!structured.contains(field)) return "";
  const json& value = structured[field];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// One client: its own session, replaced every `kSessionLife` rounds, and a round of calls.
class SoakClient {
 public:
  SoakClient(const sandbox::testing::HttpUrl& url, int index, Tally* tally)
      : client_(url, 300), index_(index), tally_(tally), random_(index) {}

  bool Start() {
    if (!client_.Initialize("soak_client")) {
      tally_->Record("initialize", 0, "HTTP " + std::to_string(client_.status()));
      return false;
    }
    return true;
  }

  void Round(int round) {
    if (session_.empty()) OpenSession();
    if (session_.empty()) return;
    RunPython();
    if (round % 2 == 0) UploadAndReadBack(round);
    if (round % 3 == 0) Timed("sandbox_run_command", {{"command", "ls /mnt/data | wc -l"}});
    if (round % 5 == 0) Timed("sandbox_list_artifacts", {});
    if (round % 25 == index_ % 25) RunOnce();
    if (round % kSessionLife == kSessionLife - 1) CloseSession();
  }

  void Finish() {
    if (!session_.empty()) CloseSession();
  }

 private:
  static constexpr int kSessionLife = 20;

  // A tools/call on this client's session; the response, its error recorded under `tool`.
  json Timed(const std::string& tool, json arguments, const std::string& expect_field = "",
             const std::string& expect_value = "") {
    if (!session_.empty() && tool != "sandbox_run_once") arguments["session_id"] = session_;
    auto t0 = BenchClock::now();
    json response = client_.Call(tool, std::move(arguments));
    double ms = Ms(BenchClock::now() - t0);
    std::string error = CallError(client_, response);
    if (error.empty() && !expect_field.empty()) {
      std::string got = Structured(response, expect_field);
      if (got != expect_value) {
        error =
            expect_field + " is " + json(got).dump() + ", expected " + json(expect_value).dump();
      }
    }
    tally_->Record(tool, ms, error);
    return error.empty() ? response : json();
  }

  void OpenSession() {
    json response = Timed("sandbox_create_session", {{"name", "soak-" + std::to_string(index_)}});
    session_ = Structured(response, "session_id");
    counter_ = 0;
  }

  void CloseSession() {
    Timed("sandbox_close_session", {}, "status", "closed");
    session_.clear();
  }

  // The session keeps `n` between runs: each run prints one more than the last.
  void RunPython() {
    ++counter_;
    Timed("sandbox_run_python", {{"code", "n = globals().get('n', 0) + 1\nprint(n)"}}, "stdout",
          std::to_string(counter_) + "\n");
  }

  void UploadAndReadBack(int round) {
    std::string text;
    std::uniform_int_distribution<int> letter('a', 'z');
    for (int i = 0; i < 4096; ++i) text.push_back(static_cast<char>(letter(random_)));
    std::string name = "soak-" + std::to_string(round % 7) + ".txt";
    json uploaded = Timed(
        "sandbox_upload_file",
        {{"filename", name}, {"content_base64", sandbox::Base64Encode(text)}, {"overwrite", true}});
    if (uploaded.is_null()) return;
    Timed("sandbox_read_file", {{"path", name}}, "content", text);
  }

  void RunOnce() { Timed("sandbox_run_once", {{"code", "print(6 * 7)"}}, "stdout", "42\n"); }

  McpHttpClient client_;
  int index_;
  Tally* tally_;
  std::mt19937 random_;
  std::string session_;
  int counter_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  sandbox::testing::HttpUrl url;
  if (argc < 2 || !sandbox::testing::ParseHttpUrl(argv[1], &url)) {
    std::fprintf(stderr, "usage: soak_client http://HOST:PORT/PATH [--clients N] [--seconds S]\n");
    return 2;
  }
  int clients = 50;
  int seconds = 60;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--clients") clients = std::atoi(argv[i + 1]);
    if (flag == "--seconds") seconds = std::atoi(argv[i + 1]);
  }
  if (clients <= 0 || seconds <= 0) {
    std::fprintf(stderr, "soak_client: --clients and --seconds must be positive\n");
    return 2;
  }
  const auto deadline = BenchClock::now() + std::chrono::seconds(seconds);
  Tally tally;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      SoakClient client(url, c, &tally);
      if (!client.Start()) return;
      for (int round = 0; BenchClock::now() < deadline; ++round) client.Round(round);
      client.Finish();
    });
  }
  for (auto& thread : threads) thread.join();
  return tally.Print() == 0 ? 0 : 1;
}
