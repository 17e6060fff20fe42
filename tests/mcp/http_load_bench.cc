// http_load_bench: N MCP sessions over Streamable HTTP, each on its own keep-alive connection and
// thread, make M `sandbox_run_python` calls of print(1) at once against a running
// `mcp-sandbox serve --http`; prints errors, per-call latency percentiles and throughput as one
// markdown table row. A native load generator (one blocked thread per client costs next to no
// CPU), so on a small machine the figures are the server's and the sandboxes', not a client
// library's event loop (tools/bench.d/mcp_latency.sh shows the SDK client's figures beside it).
//
// --idle K: K more connections stay open meanwhile, doing nothing or sending half a request
// head (as slowloris does); one the server closes (its header deadline) is opened again.
//
// --creates 1: also a row for the first calls, each of which creates its session (a burst of N
// creates at once). --wait-pool P: first wait until the server's warm pool has P ready.
//
// usage: http_load_bench URL [--sessions N] [--calls M] [--warmup W] [--idle K] [--creates 1]
//                            [--wait-pool P]   (BENCH_DUMP=FILE: raw samples)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/bench_stats.h"
#include "tests/support/mcp_http_client.h"

namespace {

using nlohmann::json;
using sandbox::testing::BenchClock;
using sandbox::testing::Ms;
using sandbox::testing::Percentile;

using Url = sandbox::testing::HttpUrl;
using Client = sandbox::testing::McpHttpClient;

bool CallOk(const json& response) {
  if (!response.is_object() || !response.contains("result")) return false;
  const json& result = response["result"];
  return !result.value("isError", false) && result.contains("structuredContent") &&
         result["structuredContent"].value("stdout", "") == "1\n";
}

// Holds `count` idle or half-sent connections open until destroyed, reopening closed ones.
class IdleCrowd {
 public:
  IdleCrowd(const Url& url, int count) : url_(url) {
    if (count <= 0) return;
    fds_.resize(static_cast<size_t>(count), -1);
    for (size_t i = 0; i < fds_.size(); ++i) fds_[i] = Open(i);
    thread_ = std::thread([this] { Keep(); });
  }
  ~IdleCrowd() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }

 private:
  int Open(size_t index) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(url_.port));
    ::inet_pton(AF_INET, url_.host == "localhost" ? "127.0.0.1" : url_.host.c_str(),
                &address.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return -1;
    }
    if (index % 2 == 0) {
      static const char kHalf[] = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ";
      (void)::send(fd, kHalf, sizeof kHalf - 1, MSG_NOSIGNAL);
    }
    return fd;
  }
  void Keep() {
    std::vector<pollfd> polls(fds_.size());
    while (!stop_) {
      for (size_t i = 0; i < fds_.size(); ++i) polls[i] = {fds_[i], POLLIN, 0};
      if (::poll(polls.data(), polls.size(), 100) <= 0) continue;
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (polls[i].revents == 0) continue;
        ::close(fds_[i]);  // answered or closed: in either case no longer idle
        fds_[i] = Open(i);
      }
    }
  }

  Url url_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Waits (at most 5 minutes) until the server's warm pool has `ready` sandboxes, or it says it
// has no pool: a burst is measured against a server in its steady state.
void WaitPool(const Url& url, int ready) {
  Client client(url);
  if (!client.Initialize("http_load_bench pool")) return;
  auto give_up = BenchClock::now() + std::chrono::minutes(5);
  while (BenchClock::now() < give_up) {
    json listed = client.Request(
        "tools/call", {{"name", "sandbox_list_sessions"}, {"arguments", json::object()}});
    const json* pool = listed.contains("/result/structuredContent/pool"_json_pointer)
                           ? &listed["/result/structuredContent/pool"_json_pointer]
                           : nullptr;
    if (pool == nullptr || !pool->is_object() || pool->value("ready", 0) >= ready) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_load_bench URL [--sessions N] [--calls M] [--warmup W]\n");
    return 2;
  }
  Url url;
  if (!sandbox::testing::ParseHttpUrl(argv[1], &url)) {
    std::fprintf(stderr, "http_load_bench: not an http://HOST:PORT/PATH URL: %s\n", argv[1]);
    return 2;
  }
  int sessions = 50;
  int calls = 20;
  int warmup = 0;
  bool ping = false;  // --ping 1: time ping instead of the call (the transport's floor)
  int idle = 0;
  bool creates_row = false;
  int wait_pool = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--sessions") sessions = std::atoi(argv[i + 1]);
    if (flag == "--calls") calls = std::atoi(argv[i + 1]);
    if (flag == "--warmup") warmup = std::atoi(argv[i + 1]);
    if (flag == "--ping") ping = std::string(argv[i + 1]) == "1";
    if (flag == "--idle") idle = std::atoi(argv[i + 1]);
    if (flag == "--creates") creates_row = std::string(argv[i + 1]) == "1";
    if (flag == "--wait-pool") wait_pool = std::atoi(argv[i + 1]);
  }
  if (wait_pool > 0) WaitPool(url, wait_pool);
  IdleCrowd crowd(url, idle);

  // BENCH_DUMP=FILE: every call's start (ms since the first), latency and session index.
  FILE* dump = std::getenv("BENCH_DUMP") ? std::fopen(std::getenv("BENCH_DUMP"), "w") : nullptr;
  const auto epoch = BenchClock::now();
  std::mutex mutex;
  std::vector<double> latencies;
  std::vector<double> first_calls;  // create + print(1)
  std::atomic<int> errors{0};
  std::atomic<int> setup_failures{0};
  std::barrier ready(sessions + 1);
  std::barrier done(sessions + 1);
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s) {
    threads.emplace_back([&, s] {
      Client client(url);
      bool set_up = client.Initialize("http_load_bench");
      // The first call creates the session (its sandbox start is not a warm call).
      auto first_start = BenchClock::now();
      json first = set_up ? client.Request("tools/call", {{"name", "sandbox_run_python"},
                                                          {"arguments", {{"code", "print(1)"}}}})
                          : json();
      double first_ms = Ms(BenchClock::now() - first_start);
      std::string session_id;
      if (set_up && CallOk(first)) {
        session_id = first["result"]["structuredContent"].value("session_id", "");
      } else if (++setup_failures == 1) {
        // The first failure says why (the rest usually repeat it).
        std::fprintf(stderr, "http_load_bench: a session was not set up: %.300s\n",
                     set_up ? first.dump().c_str() : "initialize failed");
      }
      for (int w = 0; w < warmup && !session_id.empty(); ++w) {
        client.Request("tools/call",
                       {{"name", "sandbox_run_python"},
                        {"arguments", {{"session_id", session_id}, {"code", "print(1)"}}}});
      }
      ready.arrive_and_wait();
      std::vector<double> mine;
      std::vector<double> starts;
      for (int c = 0; c < calls && !session_id.empty(); ++c) {
        auto t0 = BenchClock::now();
        if (dump != nullptr) starts.push_back(Ms(t0 - epoch));
        json response =
            ping ? client.Request("ping", json::object())
                 : client.Request(
                       "tools/call",
                       {{"name", "sandbox_run_python"},
                        {"arguments", {{"session_id", session_id}, {"code", "print(1)"}}}});
        mine.push_back(Ms(BenchClock::now() - t0));
        if (ping ? !(response.is_object() && response.contains("result")) : !CallOk(response)) {
          ++errors;
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
        if (!session_id.empty()) first_calls.push_back(first_ms);
        for (size_t i = 0; dump != nullptr && i < starts.size(); ++i) {
          std::fprintf(dump, "%.3f %.3f %d\n", starts[i], mine[i], s);
        }
      }
      done.arrive_and_wait();
    });
  }
  ready.arrive_and_wait();
  auto started = BenchClock::now();
  done.arrive_and_wait();
  double wall_ms = Ms(BenchClock::now() - started);
  for (auto& thread : threads) thread.join();

  if (creates_row) {
    std::printf(
        "| HTTP, native keep-alive clients: %d creates at once (first call: create + print(1)) "
        "| %zu | %.2f | %.2f | %.2f | %.2f | |\n",
        sessions, first_calls.size(), Percentile(first_calls, 0.5), Percentile(first_calls, 0.9),
        Percentile(first_calls, 0.99), Percentile(first_calls, 1.0));
  }
  std::printf(
      "| HTTP, native keep-alive clients (a thread each): %d sessions x %d calls at once, "
      "%s%s | %zu | %.2f | %.2f | %.2f | %.2f | %s |\n",
      sessions, calls, ping ? "ping" : "print(1)",
      idle > 0 ? (", " + std::to_string(idle) + " idle/half-sent connections open").c_str() : "",
      latencies.size(), Percentile(latencies, 0.5), Percentile(latencies, 0.9),
      Percentile(latencies, 0.99), Percentile(latencies, 1.0),
      idle > 0 ? "p99 <= 1000, no errors"
      : ping   ? "(the transport's floor)"
               : "p99 <= 50, no errors");
  std::printf("\nNative clients: %d error(s), %d session(s) not set up, %.0f calls/s.\n",
              errors.load(), setup_failures.load(),
              static_cast<double>(latencies.size()) / (wall_ms / 1000));
  return errors.load() + setup_failures.load() == 0 ? 0 : 1;
}
