// Work a request's thread may leave until its reply is sent: the client does not wait for it.
// The MCP server opens an AfterReply around each request's work and runs what was deferred once
// the response is out (mcp/server.cc); on a thread with none open (the `run` command, a test),
// deferred work runs at once, so it is never lost, only not deferred.
#pragma once

#include <functional>
#include <vector>

namespace sandbox {

class AfterReply {
 public:
  // Collects what this thread defers until Run() or the end of the scope. Scopes nest: the
  // innermost collects.
  AfterReply();
  // Runs what is still deferred.
  ~AfterReply();
  AfterReply(const AfterReply&) = delete;
  AfterReply& operator=(const AfterReply&) = delete;

  // Runs what was deferred so far, in order.
  void Run();

  // Defers `work` to the innermost open scope of this thread, or runs it now when none is open.
  static void Defer(std::function<void()> work);

 private:
  AfterReply* outer_;
  std::vector<std::function<void()>> work_;
};

}  // namespace sandbox
