// The stdio transport over pipes: framing, parse errors, EOF teardown.
#include "mcp/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/tool_result.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace stdio_transport_test {

using namespace sandbox::mcp;
using namespace std::chrono_literals;

namespace {

struct Pipes {
  sandbox::Fd client_in, server_in, server_out, client_out;
  Pipes() {
    int a[2], b[2];
    REQUIRE(pipe2(a, O_CLOEXEC) == 0);
    REQUIRE(pipe2(b, O_CLOEXEC) == 0);
    server_in.Reset(a[0]);
    client_in.Reset(a[1]);
    client_out.Reset(b[0]);
    server_out.Reset(b[1]);
  }
};

// Reads lines from `fd` until `count` arrived or the timeout passed.
std::vector<Json> ReadLines(int fd, size_t count, std::chrono::milliseconds timeout = 5s) {
  std::vector<Json> lines;
  std::string buffer;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (lines.size() < count && std::chrono::steady_clock::now() < deadline) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      lines.push_back(Json::parse(buffer.substr(0, newline)));
      buffer.erase(0, newline + 1);
    }
  }
  return lines;
}

// Counts down when the slow tool is running, so a test can act on a call in flight.
struct Started {
  std::mutex mutex;
  std::condition_variable changed;
  bool started = false;
  void Set() {
    std::lock_guard<std::mutex> lock(mutex);
    started = true;
    changed.notify_all();
  }
  bool Wait(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [this] { return started; });
  }
};

std::vector<Tool> Tools(Started* started = nullptr) {
  Tool slow{"slow",
            "Slow",
            "Runs until cancelled.",
            {{"type", "object"}, {"additionalProperties", false}},
            nullptr,
            nullptr,
            [started](ToolCall& call, const Json&) {
              std::mutex mutex;
              std::condition_variable cancelled;
              bool stop = false;
              auto hook = call.OnCancel([&] {
                std::lock_guard<std::mutex> lock(mutex);
                stop = true;
                cancelled.notify_all();
              });
              if (started != nullptr) started->Set();
              std::unique_lock<std::mutex> lock(mutex);
              // `stop` only: call.cancelled() takes the call's lock, which Cancel() holds while
              // it runs the hook above, which takes `mutex` (a lock-order inversion that
              // ThreadSanitizer reported). The hook runs at once when already cancelled.
              cancelled.wait(lock, [&] { return stop; });
              ToolResultBuilder result(1024);
              result.AddText("stopped");
              return result.Build();
            }};
  return {slow};
}

}  // namespace

TEST_CASE("stdio: one message per line, parse errors answered, EOF ends serving", "[unit]") {
  Pipes pipes;
  Started started;
  Server server(ServerOptions{}, Tools(&started));
  StdioOptions options;
  options.in_fd = pipes.server_in.get();
  options.out_fd = pipes.server_out.get();
  options.own_process_stdio = false;
  std::atomic<bool> shutdown_called{false};
  sandbox::Status served;  // checked on this thread after the join
  std::thread serving(
      [&] { served = ServeStdio(server, options, [&] { shutdown_called = true; }); });

  std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\r\n"  // CRLF is tolerated
      "\n"    // blank lines are skipped
      "not json\n"
      R"({"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"nope"}})"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"bogus/method"})"
      "\n";
  REQUIRE(sandbox::WriteAll(pipes.client_in.get(), input));
  auto lines = ReadLines(pipes.client_out.get(), 4);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0]["id"] == 1);
  CHECK(lines[0]["result"]["protocolVersion"] == "2025-06-18");
  CHECK(lines[1]["id"].is_null());
  CHECK(lines[1]["error"]["code"] == kParseError);
  CHECK(lines[2]["id"] == "abc");
  CHECK(lines[2]["error"]["code"] == kInvalidParams);
  CHECK(lines[3]["id"] == 3);
  CHECK(lines[3]["error"]["code"] == kMethodNotFound);

  // A call in flight at EOF is cancelled (no response) and serving ends.
  REQUIRE(
      sandbox::WriteAll(pipes.client_in.get(),
                        R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}})"
                        "\n"));
  REQUIRE(started.Wait(10s));  // in flight
  pipes.client_in.Reset();
  serving.join();
  CHECK(served);
  CHECK(shutdown_called);
  pipes.server_out.Reset();
  CHECK(ReadLines(pipes.client_out.get(), 1, 500ms).empty());
}

TEST_CASE("stdio: an oversized line is refused and the stream recovers", "[unit]") {
  Pipes pipes;
  Server server(ServerOptions{}, {});
  StdioOptions options;
  options.in_fd = pipes.server_in.get();
  options.out_fd = pipes.server_out.get();
  options.own_process_stdio = false;
  options.max_line_bytes = 1000;
  std::thread serving([&] { (void)ServeStdio(server, options, {}); });
  std::thread writer([&] {
    std::string big = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" +
                      std::string(200000, 'x') + "\"}}\n";
    (void)sandbox::WriteAll(pipes.client_in.get(), big);
    (void)sandbox::WriteAll(pipes.client_in.get(), R"({"jsonrpc":"2.0","id":2,"method":"ping"})"
                                                   "\n");
  });
  auto lines = ReadLines(pipes.client_out.get(), 2);
  writer.join();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["error"]["code"] == kInvalidRequest);
  CHECK(lines[1]["id"] == 2);
  CHECK(lines[1]["result"] == Json::object());
  pipes.client_in.Reset();
  serving.join();
}

TEST_CASE("stdio: a request nested 100 000 deep gets a parse error and serving goes on", "[unit]") {
  Pipes pipes;
  Server server(ServerOptions{}, {});
  StdioOptions options;
  options.in_fd = pipes.server_in.get();
  options.out_fd = pipes.server_out.get();
  options.own_process_stdio = false;
  std::thread serving([&] { (void)ServeStdio(server, options, {}); });
  std::thread writer([&] {
    std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":)" +
                       std::string(100000, '[') + std::string(100000, ']') + "}}\n";
    (void)sandbox::WriteAll(pipes.client_in.get(), deep);
    (void)sandbox::WriteAll(pipes.client_in.get(), R"({"jsonrpc":"2.0","id":2,"method":"ping"})"
                                                   "\n");
  });
  auto lines = ReadLines(pipes.client_out.get(), 2, 30s);
  writer.join();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["id"].is_null());
  CHECK(lines[0]["error"]["code"] == kParseError);
  CHECK(lines[0]["error"]["message"].get<std::string>().find("nested deeper") != std::string::npos);
  CHECK(lines[1]["id"] == 2);
  CHECK(lines[1]["result"] == Json::object());
  pipes.client_in.Reset();
  serving.join();
}

}  // namespace stdio_transport_test
