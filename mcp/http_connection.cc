#include "mcp/http_connection.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "mcp/http_reply.h"
#include "mcp/http_response_writer.h"
#include "mcp/jsonrpc.h"
#include "runtime/base/ascii.h"
#include "runtime/metrics/sandbox_metrics.h"

namespace sandbox::mcp {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// After a refusal, read and drop what the client still sends for this long (at most this
// much), so it sees the answer instead of a reset; then close. nginx's lingering close.
constexpr auto kLingerTime = 2s;
constexpr size_t kLingerBytes = 1u << 20;

// Parses one request into an HttpRequestHead and a string body, refusing more than
// `max_fields` header fields (the byte limits are basic_parser's header_limit/body_limit).
// Fields beyond what we read are never stored, so a hostile head costs at most its bytes.
class RequestParser : public bhttp::basic_parser<true> {
 public:
  explicit RequestParser(size_t max_fields) : max_fields_(max_fields) {}
  HttpRequestHead head;
  std::string body;
  bool too_many_fields = false;

 private:
  void on_request_impl(bhttp::verb, beast::string_view method, beast::string_view target, int,
                       beast::error_code&) override {
    head.method = std::string(method);
    head.target = std::string(target);
  }
  void on_response_impl(int, beast::string_view, int, beast::error_code& ec) override {
    ec = bhttp::error::bad_version;
  }
  void on_field_impl(bhttp::field, beast::string_view name, beast::string_view value,
                     beast::error_code& ec) override {
    if (head.fields.size() >= max_fields_) {
      too_many_fields = true;
      ec = bhttp::error::header_limit;
      return;
    }
    head.fields.push_back({std::string(name), std::string(value)});
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length,
                         beast::error_code&) override {
    // body_limit has refused a longer declared length before this point.
    if (length) body.reserve(static_cast<size_t>(*length));
  }
  size_t on_body_impl(beast::string_view data, beast::error_code&) override {
    body.append(data.data(), data.size());
    return data.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view data, beast::error_code&) override {
    body.append(data.data(), data.size());
    return data.size();
  }
  void on_finish_impl(beast::error_code&) override {}

  size_t max_fields_;
};

// One TCP connection: reads a request head under the header deadline, judges it, reads the
// body (if admitted) under the body deadline, hands the request to a worker and writes what
// the worker sends back. Everything on the socket runs on the connection's strand.
class HttpConn : public HttpExchange, public std::enable_shared_from_this<HttpConn> {
 public:
  HttpConn(HttpConnHost& host, tcp::socket socket, std::string peer)
      : host_(host), stream_(std::move(socket)), peer_(std::move(peer)) {
    metrics::HttpConnectionOpened();
  }
  ~HttpConn() override {
    host_.Forget(this, peer_);
    metrics::HttpConnectionClosed();
  }

  void Start() {
    stream_.expires_after(host_.Options().header_timeout);
    ReadHeader();
  }
  void Begin() override {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Start(); });
  }
  // From any thread.
  void PostClose() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }
  // Worker side: writes `data` and waits until it is out. False: the client is gone.
  bool WriteWait(std::string data) override {
    auto done = std::make_shared<std::promise<bool>>();
    auto result = done->get_future();
    auto buffer = std::make_shared<std::string>(std::move(data));
    asio::post(stream_.get_executor(), [self = shared_from_this(), buffer, done] {
      if (self->closed_) return done->set_value(false);
      self->stream_.expires_after(self->host_.Options().write_timeout);
      asio::async_write(self->stream_, asio::buffer(*buffer),
                        [self, buffer, done](beast::error_code ec, size_t) {
                          if (ec) self->Close();
                          done->set_value(!ec);
                        });
    });
    try {
      return result.get();
    } catch (const std::future_error&) {
      return false;  // the I/O loop ended before the write ran
    }
  }
  // Worker side: writes the end of the answer, then reads the next request (or closes).
  void Finish(std::string data, bool close) override {
    auto buffer = std::make_shared<std::string>(std::move(data));
    asio::post(stream_.get_executor(), [self = shared_from_this(), buffer, close] {
      if (self->closed_) return;
      self->stream_.expires_after(self->host_.Options().write_timeout);
      asio::async_write(self->stream_, asio::buffer(*buffer),
                        [self, buffer, close](beast::error_code ec, size_t) {
                          if (ec || close || self->host_.Stopping()) return self->Close();
                          self->AwaitNext();
                        });
    });
  }

  bool PeerGone() override {
    if (closed_flag_.load()) return true;
    char byte = 0;
    ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;
    if (n == 0) return true;  // orderly shutdown by the client
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }

 private:
  void ReadHeader() {
    parser_.emplace(host_.Options().max_header_fields);
    parser_->header_limit(static_cast<std::uint32_t>(host_.Options().max_header_bytes));
    parser_->body_limit(host_.Options().max_body_bytes);
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // Keep-alive: wait for the first byte of the next request, then give the rest of its head
  // the header deadline.
  void AwaitNext() {
    if (buffer_.size() > 0) return Start();
    stream_.expires_after(host_.Options().keep_alive_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->Start();
                            });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == bhttp::error::header_limit) {
      return Refuse(JsonErrorResponse(431, kTransportError, "Request Header Fields Too Large"));
    }
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::eof || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset) {
      return Close();  // gone, or too slow: nothing worth an answer
    }
    if (ec == bhttp::error::body_limit) {
      return Refuse(JsonErrorResponse(413, kTransportError, "Payload Too Large"));
    }
    if (ec) return Refuse(JsonErrorResponse(400, kTransportError, "Bad Request: malformed HTTP"));
    HttpRequestHead& head = parser_->head;
    if (auto length = parser_->content_length()) head.content_length = *length;
    head.chunked = parser_->chunked();
    verdict_ = host_.Judge(head);
    if (!verdict_.admit) return Refuse(verdict_.response);
    if (parser_->is_done()) return Dispatch();
    // The declared length (or the cap, for chunked bodies) buys time at 1 MiB/s.
    uint64_t expected = head.content_length.value_or(host_.Options().max_body_bytes);
    stream_.expires_after(host_.Options().body_timeout + std::chrono::seconds(expected >> 20));
    if (AsciiLower(head.Get("Expect")) == "100-continue") {
      static const std::string continue_answer = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(continue_answer),
                        [self = shared_from_this()](beast::error_code ec2, size_t) {
                          if (ec2) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    bhttp::async_read(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec == bhttp::error::body_limit) {
            return self->Refuse(JsonErrorResponse(413, kTransportError, "Payload Too Large"));
          }
          if (ec) return self->Close();  // timeout, reset, malformed chunks
          self->Dispatch();
        });
  }

  void Dispatch() {
    stream_.expires_never();  // the worker's writes set their own deadline
    bool keep_alive = parser_->keep_alive();
    HttpRequestHead head = std::move(parser_->head);
    std::string body = std::move(parser_->body);
    parser_.reset();
    bool queued = host_.Submit(shared_from_this(), std::move(verdict_), std::move(head),
                               std::move(body), keep_alive);
    if (!queued) Close();
  }

  // Answers a request we will not serve, then closes without reading its body.
  void Refuse(const HttpResponse& response) {
    metrics::HttpRefused(response.status);
    parser_.reset();
    bool close = true;
    auto buffer = std::make_shared<std::string>(SerializeOrServerError(response, &close));
    stream_.expires_after(host_.Options().write_timeout);
    asio::async_write(stream_, asio::buffer(*buffer),
                      [self = shared_from_this(), buffer](beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        self->Linger();
                      });
  }

  void Linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    buffer_.clear();
    stream_.expires_after(kLingerTime);
    Drain();
  }
  void Drain() {
    if (lingered_ >= kLingerBytes) return Close();
    stream_.async_read_some(buffer_.prepare(16384),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->lingered_ += n;
                              self->Drain();
                            });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    closed_flag_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  HttpConnHost& host_;
  beast::tcp_stream stream_;
  std::string peer_;
  beast::flat_buffer buffer_{64u << 10};
  std::optional<RequestParser> parser_;
  HttpVerdict verdict_;
  size_t lingered_ = 0;
  bool closed_ = false;
  std::atomic<bool> closed_flag_{false};  // closed_, for worker threads (PeerGone)
};

}  // namespace

std::shared_ptr<HttpExchange> MakeHttpConnection(HttpConnHost& host, tcp::socket socket,
                                                 std::string peer) {
  return std::make_shared<HttpConn>(host, std::move(socket), std::move(peer));
}

}  // namespace sandbox::mcp
