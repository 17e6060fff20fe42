// The structured fields of a log line (SANDBOX_LOG_FORMAT=json): what a thread is working on
// (the session, the tool, the MCP request id, the W3C traceparent its client sent) and, for an
// event line, its name, duration and outcome. Set for a scope on the thread that logs
// (ScopedLogFields); the JSON formatter of logging.cc writes the innermost values of each field
// into every line logged meanwhile, so the lines of one call join up across the proxy and the
// replicas. The console format leaves them out.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandbox {

struct LogFields {
  std::string event;  // "" = "log" (a line that is not a named event)
  std::string session_id;
  std::string tool;
  std::string request_id;   // the JSON-RPC id, as JSON text (a string keeps its quotes)
  std::string traceparent;  // validated by the caller (mcp/trace_context.h)
  std::optional<double> duration_ms;
  std::string outcome;
};

// Sets the non-empty fields of `fields` over the thread's current ones until destroyed, then
// restores them. Scopes nest; not to be moved across threads.
class ScopedLogFields {
 public:
  explicit ScopedLogFields(const LogFields& fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  LogFields saved_;
};

// The fields in force on this thread.
const LogFields& CurrentLogFields();

// `"event":…,` then each field that is set, then `"msg":…` — JSON members, with every string
// escaped (invalid UTF-8 replaced) and each client-given field cut to at most 128 bytes.
void AppendJsonLogMembers(const LogFields& fields, std::string_view message, std::string& out);

}  // namespace sandbox
