// Fuzz target: the JSON-RPC reader and the dispatcher. The input is what a stdio client sends,
// one message per line, handled as the stdio transport handles a line (parse, classify, hand
// to a Connection) by the server `serve` builds, with the real tools over a backend that
// starts no sandbox (no_backend_server.h). Seeds start with initialize, so mutations reach
// every method, the tools' argument checks and batches.
// Invariants: nothing throws or crashes; every message the server sends serializes to one line
// of JSON that parses back; each reply is closed exactly once; every request with a valid id
// is answered with that id.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/no_backend_server.h"

namespace {

using sandbox::mcp::Json;

class CheckingReply : public sandbox::mcp::Reply {
 public:
  void Send(const Json& message) override {
    std::string line = sandbox::mcp::Serialize(message);
    FUZZ_CHECK(line.find('\n') == std::string::npos);
    FUZZ_CHECK(sandbox::mcp::ParseJson(line).has_value());
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.push_back(message);
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++closed_;
    changed_.notify_all();
  }
  // Waits for Close (tool calls with a progressToken run on the pool); checks it came once.
  void WaitClosedOnce() {
    std::unique_lock<std::mutex> lock(mutex_);
    bool closed = changed_.wait_for(lock, std::chrono::seconds(20), [this] { return closed_ > 0; });
    FUZZ_CHECK(closed);
    FUZZ_CHECK(closed_ == 1);
  }
  // Responses (messages without a method) to the request with `id`.
  int ResponsesTo(const Json& id) {
    std::lock_guard<std::mutex> lock(mutex_);
    int count = 0;
    for (const auto& m : messages_) {
      if (m.is_object() && !m.contains("method") && m.contains("id") && m["id"] == id) ++count;
    }
    return count;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Json> messages_;
  int closed_ = 0;
};

void HandleLine(sandbox::mcp::Connection& connection, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  auto value = sandbox::mcp::ParseMessageJson(line);
  if (!value) {
    FUZZ_CHECK(!value.error().empty());
    return;
  }
  // What the dispatcher will make of it, to check the answer below.
  Json request_id;
  if (value->is_object()) {
    auto message = sandbox::mcp::ClassifyMessage(*value);
    if (message && message->kind == sandbox::mcp::Message::Kind::kRequest) {
      request_id = message->id;
    }
  }
  auto reply = std::make_shared<CheckingReply>();
  connection.Handle(std::move(*value), reply);
  reply->WaitClosedOnce();
  // A request is answered once, except a notifications/cancelled racing it (none here: each
  // line waits for the one before).
  if (!request_id.is_null()) FUZZ_CHECK(reply->ResponsesTo(request_id) == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& shared = sandbox::fuzz::SharedNoBackendServer();
  auto connection = shared.server->NewConnection();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty()) {
    size_t end = input.find('\n');
    std::string_view line = input.substr(0, end);
    HandleLine(*connection, line);
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  connection->CancelAll();
  return 0;
}
