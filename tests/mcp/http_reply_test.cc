// How one request's answer goes out over HTTP/1.1, without a socket: the wire format, the
// choice between one JSON body and an SSE stream, and what a client leaving does (a cancel for
// a 2026-07-28 request, nothing for a 2025 one). The exchange below records what a connection
// would write; the reply is filled as the dispatcher fills it, from another thread.
#include "mcp/http_reply.h"

#include <atomic>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "mcp/jsonrpc.h"

namespace http_reply_test {

using namespace sandbox::mcp;
using namespace std::chrono_literals;

namespace {

// The bytes an HTTP connection would write, and whether the client is still there.
class RecordingExchange : public HttpExchange {
 public:
  void Begin() override {}
  bool WriteWait(std::string data) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (peer_gone) return false;
    written_ += data;
    return true;
  }
  void Finish(std::string data, bool close) override {
    std::lock_guard<std::mutex> lock(mutex_);
    written_ += data;
    finished_ = true;
    close_ = close;
  }
  void PostClose() override { post_closed = true; }
  bool PeerGone() override { return peer_gone; }

  std::string written() {
    std::lock_guard<std::mutex> lock(mutex_);
    return written_;
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_;
  }
  bool close() {
    std::lock_guard<std::mutex> lock(mutex_);
    return close_;
  }
  std::atomic<bool> peer_gone{false};
  std::atomic<bool> post_closed{false};

 private:
  std::mutex mutex_;
  std::string written_;
  bool finished_ = false;
  bool close_ = false;
};

Json Result(int id) { return MakeResponse(id, Json{{"content", Json::array()}}); }
Json Progress() { return MakeNotification("notifications/progress", {{"progress", 1}}); }

const std::vector<HttpField> kCors = {{"Access-Control-Allow-Origin", "http://localhost:8080"}};

}  // namespace

TEST_CASE("http reply: the status line, header fields, chunks and SSE events on the wire",
          "[unit]") {
  HttpResponse response;
  response.content_type = "application/json";
  response.headers = {{"Mcp-Session-Id", "abc"}};
  response.body = "{}";
  CHECK(SerializeResponse(response, false, false) ==
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: abc\r\n"
        "Content-Length: 2\r\nConnection: keep-alive\r\n\r\n{}");
  CHECK(SerializeResponse(response, true, true) ==
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: abc\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  HttpResponse empty;
  empty.status = 204;
  CHECK(SerializeResponse(empty, false, false) ==
        "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n");
  empty.status = 299;
  CHECK(SerializeResponse(empty, true, false)->rfind("HTTP/1.1 299 Unknown\r\n", 0) == 0);
  CHECK(Chunk(std::string(26, 'x')) == "1a\r\n" + std::string(26, 'x') + "\r\n");
  CHECK(SseEvent(R"({"a":1})") == "event: message\ndata: {\"a\":1}\n\n");
}

TEST_CASE("http reply: a whole answer is 202, one JSON body, or a batch as one SSE body",
          "[unit]") {
  CHECK(WholeResponse({}, false).status == 202);
  CHECK(WholeResponse({}, false).body.empty());

  auto one = WholeResponse({Serialize(Result(1))}, false);
  CHECK(one.status == 200);
  CHECK(one.content_type == "application/json");
  CHECK(one.body == Serialize(Result(1)));

  // An error's HTTP status follows it in the modern era only.
  std::string not_found = Serialize(MakeErrorResponse(2, kMethodNotFound, "Method not found"));
  CHECK(WholeResponse({not_found}, true).status == 404);
  CHECK(WholeResponse({not_found}, false).status == 200);
  std::string mismatch = Serialize(MakeErrorResponse(2, kHeaderMismatch, "Header mismatch"));
  CHECK(WholeResponse({mismatch}, true).status == 400);

  auto batch = WholeResponse({Serialize(Result(1)), Serialize(Result(2))}, false);
  CHECK(batch.status == 200);
  CHECK(batch.content_type == "text/event-stream");
  CHECK(batch.body == SseEvent(Serialize(Result(1))) + SseEvent(Serialize(Result(2))));
}

TEST_CASE("http reply: notifications first turn the reply into a stream, a detached one drops",
          "[unit]") {
  std::atomic<bool> stop{false};
  PostReply whole;
  whole.Send(Result(1));
  whole.Close();
  CHECK(whole.WaitWhole(stop));
  CHECK(whole.TakeAll().size() == 1);

  PostReply streamed;
  streamed.Send(Progress());
  CHECK_FALSE(streamed.WaitWhole(stop));
  CHECK_FALSE(streamed.gone());
  std::string message;
  CHECK(streamed.Pop(&message, 0ms) == PostReply::Next::kMessage);
  CHECK(message == Serialize(Progress()));
  CHECK(streamed.Pop(&message, 0ms) == PostReply::Next::kIdle);
  streamed.Detach();
  streamed.Send(Result(1));  // the client left: nothing more is kept
  streamed.Close();
  CHECK(streamed.Pop(&message, 0ms) == PostReply::Next::kDone);

  PostReply stopped;
  stop = true;
  CHECK_FALSE(stopped.WaitWhole(stop));
}

TEST_CASE("http reply: a whole answer goes out as one body with the CORS headers first", "[unit]") {
  std::atomic<bool> stopping{false};
  bool cancelled = false;
  auto cancel = [&] { cancelled = true; };
  for (bool keep_alive : {true, false}) {
    RecordingExchange exchange;
    PostReply reply;
    std::thread dispatcher([&] {
      std::this_thread::sleep_for(20ms);
      reply.Send(Result(7));
      reply.Close();
    });
    SendReply(exchange, reply, kCors, {.keep_alive = keep_alive, .modern = false}, stopping,
              cancel);
    dispatcher.join();
    CHECK(exchange.finished());
    CHECK(exchange.close() == !keep_alive);
    std::string written = exchange.written();
    CHECK(written.rfind("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        "Access-Control-Allow-Origin: http://localhost:8080\r\n",
                        0) == 0);
    CHECK(written.find(Serialize(Result(7))) != std::string::npos);
  }
  CHECK_FALSE(cancelled);
}

TEST_CASE("http reply: a notification before the response makes a chunked SSE stream", "[unit]") {
  std::atomic<bool> stopping{false};
  RecordingExchange exchange;
  PostReply reply;
  std::thread dispatcher([&] {
    reply.Send(Progress());
    std::this_thread::sleep_for(300ms);  // SendReply is streaming by now
    reply.Send(Result(3));
    reply.Close();
  });
  SendReply(exchange, reply, kCors, {.keep_alive = true, .modern = true}, stopping, [] {});
  dispatcher.join();
  std::string written = exchange.written();
  CHECK(written.rfind("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      "Access-Control-Allow-Origin: http://localhost:8080\r\n"
                      "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
                      "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n",
                      0) == 0);
  std::string events =
      Chunk(SseEvent(Serialize(Progress()))) + Chunk(SseEvent(Serialize(Result(3))));
  CHECK(written.find(events) != std::string::npos);
  CHECK(written.size() >= 5);
  CHECK(written.substr(written.size() - 5) == "0\r\n\r\n");
  CHECK(exchange.finished());
  CHECK_FALSE(exchange.close());
}

TEST_CASE("http reply: a modern client closing the stream cancels, a 2025 one only leaves",
          "[unit]") {
  std::atomic<bool> stopping{false};
  // Made anew for each section (Catch2 runs the case once per section).
  RecordingExchange exchange;
  PostReply reply;
  std::atomic<bool> cancelled{false};
  SECTION("modern, while the answer is awaited whole") {
    exchange.peer_gone = true;
    SendReply(exchange, reply, kCors, {.keep_alive = true, .modern = true}, stopping,
              [&] { cancelled = true; });
    CHECK(cancelled);
    CHECK(exchange.post_closed);
    CHECK_FALSE(exchange.finished());
    CHECK(exchange.written().empty());
  }
  SECTION("modern, while streaming") {
    reply.Send(Progress());
    std::thread client([&] {
      std::this_thread::sleep_for(100ms);
      exchange.peer_gone = true;
    });
    SendReply(exchange, reply, kCors, {.keep_alive = true, .modern = true}, stopping,
              [&] { cancelled = true; });
    client.join();
    CHECK(cancelled);
    CHECK(exchange.post_closed);
    CHECK_FALSE(exchange.finished());
  }
  SECTION("2025: the stream is dropped, the request goes on") {
    reply.Send(Progress());
    std::thread dispatcher([&] {
      std::this_thread::sleep_for(100ms);
      exchange.peer_gone = true;
      reply.Send(Progress());  // this write fails: the client is gone
    });
    SendReply(exchange, reply, kCors, {.keep_alive = true, .modern = false}, stopping,
              [&] { cancelled = true; });
    dispatcher.join();
    CHECK_FALSE(cancelled);
    CHECK_FALSE(exchange.post_closed);
    CHECK_FALSE(exchange.finished());
    std::string message;
    reply.Send(Result(1));
    CHECK(reply.Pop(&message, 0ms) == PostReply::Next::kIdle);  // detached: dropped
  }
}

TEST_CASE("http reply: when the server stops, a modern request is cancelled and its stream ends",
          "[unit]") {
  std::atomic<bool> stopping{true};
  RecordingExchange exchange;
  PostReply reply;
  std::atomic<bool> cancelled{false};
  SendReply(exchange, reply, kCors, {.keep_alive = true, .modern = true}, stopping,
            [&] { cancelled = true; });
  CHECK(cancelled);
  CHECK(exchange.finished());
  CHECK(exchange.close());  // the server stops: no next request on this connection
}

}  // namespace http_reply_test
