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
#include "mcp/http_exchange.h"
#include "mcp/http_options.h"

namespace sandbox::mcp {

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

}  // namespace sandbox::mcp
