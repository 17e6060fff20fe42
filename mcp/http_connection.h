// One HTTP/1.1 connection of the Streamable HTTP transport, on Boost.Beast (internal: included
// by mcp/http_transport.cc and mcp/http_connection.cc only, to keep Beast's compile time there).
// A connection reads a request head under the header deadline and the byte and field limits,
// has its host judge it, reads the body only when admitted (under the body deadline), hands the
// request to its host's workers, and writes what a worker sends back; between requests it
// waits at most the keep-alive timeout. A refused request is answered, the connection shut for
// writing, and what the client still sends is dropped for a moment (nginx's lingering close)
// so it can read the answer.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "mcp/http_admission.h"
#include "mcp/http_transport.h"

namespace sandbox::mcp {

// The worker side of a connection whose request is being worked on. Thread-safe.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // Starts reading requests (once, after the host has counted it).
  virtual void Begin() = 0;
  // Writes `data` and waits until it is out. False: the client is gone (or too slow).
  virtual bool WriteWait(std::string data) = 0;
  // Writes the end of the answer, then reads the next request, or closes when `close`.
  virtual void Finish(std::string data, bool close) = 0;
  // Closes the connection (the server stops).
  virtual void PostClose() = 0;
  // True once the client has closed its side (or reset) while its request is worked on: for
  // the 2026-07-28 rule that closing a response stream cancels the request. Peeks, so bytes of
  // a pipelined next request stay where they are.
  virtual bool PeerGone() = 0;
};

// What a connection needs from the server it belongs to.
class HttpConnHost {
 public:
  virtual ~HttpConnHost() = default;
  virtual const HttpOptions& Options() const = 0;
  virtual HttpVerdict Judge(const HttpRequestHead& head) const = 0;
  // Queues a complete, admitted request for a worker. False: the server is stopping.
  virtual bool Submit(std::shared_ptr<HttpExchange> exchange, HttpVerdict verdict,
                      HttpRequestHead head, std::string body, bool keep_alive) = 0;
  // The connection is gone (called from its destructor).
  virtual void Forget(HttpExchange* exchange, const std::string& peer) = 0;
  virtual bool Stopping() const = 0;
};

// A connection for an accepted socket from `peer` (its IP address); Begin() starts it.
std::shared_ptr<HttpExchange> MakeHttpConnection(HttpConnHost& host,
                                                 boost::asio::ip::tcp::socket socket,
                                                 std::string peer);

// The status line and header fields of `response`, with its body unless `chunked`.
std::string SerializeResponse(const HttpResponse& response, bool close, bool chunked);
// One chunk of a chunked body.
std::string Chunk(std::string_view data);

}  // namespace sandbox::mcp
