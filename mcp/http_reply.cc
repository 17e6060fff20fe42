#include "mcp/http_reply.h"

#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "mcp/protocol_era.h"

namespace sandbox::mcp {

namespace {

using namespace std::chrono_literals;

}  // namespace

std::string Chunk(std::string_view data) {
  return fmt::format("{:x}\r\n", data.size()) + std::string(data) + "\r\n";
}

std::string SseEvent(std::string_view data) {
  return "event: message\ndata: " + std::string(data) + "\n\n";
}

void FinishWith(HttpExchange& exchange, HttpResponse response, const std::vector<HttpField>& cors,
                bool close) {
  response.headers.insert(response.headers.begin(), cors.begin(), cors.end());
  std::string bytes = SerializeOrServerError(response, &close);
  exchange.Finish(std::move(bytes), close);
}

void PostReply::Send(const Json& message) {
  std::string line = Serialize(message);
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_) return;
  if (queue_.empty() && !notified_) notified_ = message.is_object() && message.contains("method");
  queue_.push_back(std::move(line));
  changed_.notify_all();
}

void PostReply::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

bool PostReply::closed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

bool PostReply::WaitWhole(const std::atomic<bool>& stop, const std::function<bool()>& client_gone) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (closed_) return true;
    if (notified_ || stop) return false;
    changed_.wait_for(lock, std::chrono::milliseconds(250));
    if (!closed_ && client_gone) {
      lock.unlock();
      bool gone = client_gone();
      lock.lock();
      if (gone) {
        gone_ = true;
        return false;
      }
    }
  }
}

bool PostReply::gone() {
  std::lock_guard<std::mutex> lock(mutex_);
  return gone_;
}

std::deque<std::string> PostReply::TakeAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(queue_, {});
}

PostReply::Next PostReply::Pop(std::string* message, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, wait, [this] { return !queue_.empty() || closed_; });
  if (!queue_.empty()) {
    *message = std::move(queue_.front());
    queue_.pop_front();
    return Next::kMessage;
  }
  return closed_ ? Next::kDone : Next::kIdle;
}

void PostReply::Detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  detached_ = true;
  queue_.clear();
}

HttpResponse WholeResponse(std::deque<std::string> messages, bool modern) {
  HttpResponse response;
  if (messages.empty()) {
    response.status = 202;  // notifications and responses only
  } else if (messages.size() == 1) {
    response.content_type = "application/json";
    if (modern) {
      if (auto parsed = ParseJson(messages.front())) response.status = ModernHttpStatus(*parsed);
    }
    response.body = std::move(messages.front());
  } else {
    for (const auto& message : messages) response.body += SseEvent(message);
    response.headers.push_back({"Cache-Control", "no-cache"});
    response.content_type = "text/event-stream";
  }
  return response;
}

void SendReply(HttpExchange& exchange, PostReply& reply, const std::vector<HttpField>& cors,
               ReplyTerms terms, const std::atomic<bool>& stopping,
               const std::function<void()>& cancel_request) {
  // The client closed the stream of a modern request: that is its cancel.
  auto cancel = [&] {
    spdlog::debug("client closed the response stream: request cancelled");
    cancel_request();
    reply.Detach();
    exchange.PostClose();
  };
  std::function<bool()> client_gone;
  if (terms.modern) client_gone = [&exchange] { return exchange.PeerGone(); };

  // A plain JSON body when the answer comes whole (most calls: no progress token, no log
  // message); an SSE stream as soon as a notification has to go out before the response.
  if (reply.WaitWhole(stopping, client_gone)) {
    return FinishWith(exchange, WholeResponse(reply.TakeAll(), terms.modern), cors,
                      !terms.keep_alive || stopping);
  }
  if (reply.gone()) return cancel();
  // The server stops: a modern request has no session for Stop() to cancel, so do it here.
  if (stopping && terms.modern) cancel_request();

  // Notifications first: stream them, then the response, as SSE.
  HttpResponse head_only;
  head_only.content_type = "text/event-stream";
  head_only.headers = cors;
  head_only.headers.push_back({"Cache-Control", "no-cache"});
  head_only.headers.push_back({"X-Accel-Buffering", "no"});
  bool close = !terms.keep_alive;
  auto lost = [&] { return terms.modern ? cancel() : reply.Detach(); };
  auto head = SerializeResponse(head_only, close, true);
  if (!head) {
    // A header the writer refuses (mcp/http_response_writer.h): a 500 instead of the stream.
    bool closing = true;
    exchange.Finish(SerializeOrServerError(head_only, &closing), closing);
    if (terms.modern) cancel_request();
    return reply.Detach();
  }
  if (!exchange.WriteWait(std::move(*head))) return lost();
  auto idle_since = std::chrono::steady_clock::now();
  std::string message;
  for (;;) {
    switch (reply.Pop(&message, 250ms)) {
      case PostReply::Next::kMessage:
        if (!exchange.WriteWait(Chunk(SseEvent(message)))) return lost();
        idle_since = std::chrono::steady_clock::now();
        continue;
      case PostReply::Next::kDone:
        break;
      case PostReply::Next::kIdle:
        if (!stopping) {
          if (terms.modern && exchange.PeerGone()) return cancel();
          if (std::chrono::steady_clock::now() - idle_since >= kSseKeepAliveInterval) {
            if (!exchange.WriteWait(Chunk(": keep-alive\n\n"))) return lost();
            idle_since = std::chrono::steady_clock::now();
          }
          continue;
        }
        break;
    }
    break;
  }
  reply.Detach();
  close = close || stopping;
  exchange.Finish("0\r\n\r\n", close);
}

}  // namespace sandbox::mcp
