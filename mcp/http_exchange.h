// The worker side of an HTTP connection whose request is being worked on: what a request's
// handler may do with the connection. An interface of its own so the code that writes replies
// (mcp/http_reply.h) needs neither Beast nor a socket; mcp/http_connection.cc implements it.
#pragma once

#include <string>

namespace sandbox::mcp {

// Thread-safe.
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

}  // namespace sandbox::mcp
