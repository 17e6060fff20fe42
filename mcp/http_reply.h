// How the answer to one request goes out over HTTP/1.1 (the status line and header fields are
// mcp/http_response_writer.h's): chunks, SSE events, and the reply to one POST /mcp, which collects
// what the dispatcher sends and writes it whole (one JSON body) or, once a notification has to go
// out before the response, as an SSE stream. Writes through HttpExchange (mcp/http_exchange.h), so
// all of it runs without a socket.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/http_admission.h"
#include "mcp/http_exchange.h"
#include "mcp/http_response_writer.h"
#include "mcp/server.h"

namespace sandbox::mcp {

// An SSE comment every so often on a quiet stream, so dead clients are noticed.
inline constexpr std::chrono::seconds kSseKeepAliveInterval{15};

// One chunk of a chunked body.
std::string Chunk(std::string_view data);
// One server-sent event carrying a JSON-RPC message.
std::string SseEvent(std::string_view data);

// Ends the exchange with `response`, the `cors` headers first; closes the connection after it
// when `close`, or when the writer refuses a header (a 500 goes out instead).
void FinishWith(HttpExchange& exchange, HttpResponse response, const std::vector<HttpField>& cors,
                bool close);

// The reply to one POST: collects what the dispatcher sends, for SendReply to hand to the
// HTTP response. Thread-safe.
class PostReply : public Reply {
 public:
  void Send(const Json& message) override;
  void Close() override;
  bool closed();
  // Waits until the answer is complete (true: it can go out as one JSON body) or a
  // notification comes first (false: it needs an SSE stream). Gives up (false) on `stop`, or
  // when `client_gone` (checked a few times a second) says the client left.
  bool WaitWhole(const std::atomic<bool>& stop, const std::function<bool()>& client_gone = nullptr);
  // True when WaitWhole gave up because the client left.
  bool gone();
  std::deque<std::string> TakeAll();
  enum class Next { kMessage, kDone, kIdle };
  // Waits up to `wait` for the next message, or the end of the stream.
  Next Pop(std::string* message, std::chrono::milliseconds wait);
  // The client went away: drop what is still to come (a disconnect is not a cancel).
  void Detach();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  bool closed_ = false;
  bool detached_ = false;
  bool notified_ = false;  // the first message was a notification
  bool gone_ = false;      // WaitWhole saw the client leave
};

// The answer to a reply that came whole: 202 when it holds no message (notifications and
// responses only), one JSON body, or several (a batch's) as one SSE body. `modern`: the HTTP
// status follows a 2026-07-28 error (ModernHttpStatus).
HttpResponse WholeResponse(std::deque<std::string> messages, bool modern);

// How SendReply answers.
struct ReplyTerms {
  bool keep_alive = true;
  // 2026-07-28: the client closing the stream cancels the request. Else (2025) a disconnect
  // is not a cancel.
  bool modern = false;
};

// Sends what `reply` collects on `exchange`, the `cors` headers first: one JSON body, or an SSE
// stream once a notification comes first, with keep-alive comments while it is quiet.
// `cancel_request` cancels the request being answered: called when a modern client closes the
// stream, and when the server stops (`stopping`) during a modern request, which has no session for
// the transport's Stop() to cancel.
void SendReply(HttpExchange& exchange, PostReply& reply, const std::vector<HttpField>& cors,
               ReplyTerms terms, const std::atomic<bool>& stopping,
               const std::function<void()>& cancel_request);

}  // namespace sandbox::mcp
