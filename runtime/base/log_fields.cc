#include "runtime/base/log_fields.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sandbox {

namespace {

// Client-given values (a session id, a request id) are bounded in the log as everywhere.
constexpr size_t kMaxFieldBytes = 128;

thread_local LogFields current_fields;

void AppendString(std::string_view name, std::string_view value, std::string& out) {
  out += '"';
  out += name;
  out += "\":";
  // dump() escapes quotes, backslashes and control characters; `replace` turns invalid UTF-8
  // into U+FFFD instead of throwing, so every line stays one JSON object.
  out += nlohmann::json(std::string(value))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out += ',';
}

}  // namespace

ScopedLogFields::ScopedLogFields(const LogFields& fields) : saved_(current_fields) {
  auto set = [](std::string& into, const std::string& from) {
    if (!from.empty()) into = from.substr(0, kMaxFieldBytes);
  };
  set(current_fields.event, fields.event);
  set(current_fields.session_id, fields.session_id);
  set(current_fields.tool, fields.tool);
  set(current_fields.request_id, fields.request_id);
  set(current_fields.traceparent, fields.traceparent);
  if (fields.duration_ms) current_fields.duration_ms = fields.duration_ms;
  set(current_fields.outcome, fields.outcome);
}

ScopedLogFields::~ScopedLogFields() { current_fields = std::move(saved_); }

const LogFields& CurrentLogFields() { return current_fields; }

void AppendJsonLogMembers(const LogFields& fields, std::string_view message, std::string& out) {
  AppendString("event", fields.event.empty() ? "log" : fields.event, out);
  if (!fields.session_id.empty()) AppendString("session_id", fields.session_id, out);
  if (!fields.tool.empty()) AppendString("tool", fields.tool, out);
  if (!fields.request_id.empty()) AppendString("request_id", fields.request_id, out);
  if (!fields.traceparent.empty()) AppendString("traceparent", fields.traceparent, out);
  if (fields.duration_ms && std::isfinite(*fields.duration_ms))
    out += fmt::format("\"duration_ms\":{:.1f},", *fields.duration_ms);
  if (!fields.outcome.empty()) AppendString("outcome", fields.outcome, out);
  AppendString("msg", message, out);
  out.pop_back();  // the last member's comma
}

}  // namespace sandbox
