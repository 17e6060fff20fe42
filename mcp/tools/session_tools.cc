// sandbox_create_session, sandbox_list_sessions, sandbox_session_status, sandbox_close_session.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_report.h"
#include "runtime/limits_json.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::mcp::tools {

namespace {

double SecondsSince(std::chrono::system_clock::time_point then) {
  return std::chrono::duration<double>(std::chrono::system_clock::now() - then).count();
}

Json LimitsJson(const Limits& limits) {
  return {{"memory_bytes", limits.memory_bytes},
          {"cpus", limits.cpus},
          {"pids", limits.pids},
          {"disk_bytes", limits.disk_bytes}};
}

// The sandbox's figures now, the disk use after its last run (absent before one) and the bytes
// its egress carried.
Json UsageJson(const SessionInfo& info) {
  Json usage = {{"memory_bytes", info.usage.memory_bytes},
                {"memory_peak_bytes", info.usage.memory_peak_bytes},
                {"pids", info.usage.pids},
                {"oom_kills", info.usage.oom_kills},
                {"cpu_seconds", info.usage.cpu_seconds},
                {"egress_bytes", info.egress.usage.bytes}};
  if (info.data_bytes) usage["data_bytes"] = *info.data_bytes;
  if (info.tmp_bytes) usage["tmp_bytes"] = *info.tmp_bytes;
  return usage;
}

// What the caller's saved sessions (hibernated, forked) take, and its budget
// (runtime/session/saved_budget.h): a fork counts here as soon as it is made. The single user
// has the server's cap alone. nullopt when hibernation is off.
struct CallerSaved {
  SavedUsage usage;
  SavedBudget budget;
};
std::optional<CallerSaved> CallersSaved(SessionManager& sessions) {
  if (sessions.saved() == nullptr) return std::nullopt;
  const std::string* subject = ActingSubject::Current();
  const std::string owner = subject != nullptr ? *subject : std::string();
  return CallerSaved{.usage = sessions.saved()->UsageOf(owner),
                     .budget = owner.empty() ? SavedBudget{} : sessions.QuotaOf(owner).saved};
}

// "/mnt/data 50.0 MiB, /tmp 4.0 KiB (after the last run)", or why there is no figure yet.
std::string DiskText(const SessionInfo& info) {
  if (!info.data_bytes && !info.tmp_bytes) return "not measured yet (read after each run)";
  auto bytes = [](const std::optional<uint64_t>& value) {
    return value ? FormatBytes(*value) : std::string("?");
  };
  return fmt::format("{} {}, {} {} (after the last run)", layout::kDataDir, bytes(info.data_bytes),
                     layout::kTmpDir, bytes(info.tmp_bytes));
}

Json SessionJson(const SessionInfo& info) {
  Json json = {{"session_id", info.id},
               {"name", ValidUtf8(info.name)},
               {"state", info.state},
               {"image", info.image},
               {"backend", info.backend},
               {"age_s", static_cast<int64_t>(SecondsSince(info.created))},
               {"idle_s", static_cast<int64_t>(SecondsSince(info.last_used))},
               {"runs", info.runs},
               {"usage", UsageJson(info)},
               {"egress", egress::EgressJson(info.egress, /*with_usage=*/true)}};
  if (!info.replica.empty()) json["replica"] = info.replica;
  if (info.state == "hibernated") json["saved_bytes"] = info.saved_bytes;
  return json;
}

// The replica a result names (SANDBOX_REPLICA_ID; absent on a single host).
const Json kReplicaProperty = {{"type", "string"},
                               {"description", "The replica (server) holding the session"}};

std::string LimitsText(const SessionInfo& info) {
  std::string text;
  for (const auto& limit : info.enforced.limits) {
    text += fmt::format("  {}: {} via {}{}\n", limit.name, limit.value,
                        LimitMechanismName(limit.mechanism),
                        limit.note.empty() ? "" : " (" + limit.note + ")");
  }
  if (info.enforced.cgroup_mode == "none" && !info.enforced.reason.empty()) {
    text += fmt::format("  why rlimits only: {}\n", info.enforced.reason);
  }
  return text;
}

// A size argument: "512m", "1g" or a number of bytes.
Result<std::optional<uint64_t>> SizeArgument(const Json& arguments, const char* name) {
  auto it = arguments.find(name);
  if (it == arguments.end()) return std::optional<uint64_t>();
  if (it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() > 0)) {
    return std::optional<uint64_t>(it->get<uint64_t>());
  }
  if (it->is_string()) {
    auto bytes = ParseBytes(it->get<std::string>());
    if (bytes) return std::optional<uint64_t>(*bytes);
  }
  return Fail(ErrorCode::kInvalidArgument, "{} must be a size such as \"256m\", \"1g\" or bytes",
              name);
}

Json SessionIdOnly() {
  return InputSchema({{"session_id", SessionIdProperty(false)}}, {"session_id"});
}

}  // namespace

Tool MakeCreateSessionTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_create_session";
  tool.title = "Create session";
  tool.description =
      "Start a new sandbox session (an isolated Linux environment with a persistent Python "
      "interpreter and a writable /mnt/data) and return its session_id. Optional: a name, an "
      "image, and limits lower than the server's defaults. Other tools also create a session "
      "when called without session_id; use this one to set a name or limits.";
  tool.input_schema = InputSchema(
      {{"name", Property("string", "A label to recognise the session by.", {{"maxLength", 200}})},
       {"image", Property("string",
                          "Image name from `mcp-sandbox image ls` (default: the "
                          "server's SANDBOX_IMAGE).",
                          {{"maxLength", 256}})},
       {"memory_limit",
        Property("string", "Memory limit, e.g. \"256m\" (or bytes); at most the server's.")},
       {"cpu_limit",
        Property("number", "CPUs, e.g. 0.5; at most the server's.", {{"exclusiveMinimum", 0}})},
       {"pids_limit", Property("integer", "Processes and threads; at most the server's.",
                               {{"minimum", 8}, {"maximum", 4194304}})},
       {"disk_limit",
        Property("string", "Size of /mnt/data, e.g. \"100m\" (or bytes); at most the server's.")},
       {"egress", Property("boolean",
                           "Network through the server's egress allowlist (default: on when the "
                           "server has one). false seals the session; true cannot widen a "
                           "server without one.")}});
  tool.output_schema = OutputSchema({{"session_id", {{"type", "string"}}},
                                     {"name", {{"type", "string"}}},
                                     {"image", {{"type", "string"}}},
                                     {"backend", {{"type", "string"}}},
                                     {"replica", kReplicaProperty},
                                     {"limits", {{"type", "object"}}},
                                     {"enforced", {{"type", "object"}}}},
                                    {"session_id", "image", "backend"});
  tool.annotations = Annotations("Create session", false, false, false);
  tool.handler = [context](ToolCall&, const Json& arguments) {
    SessionOptions options;
    options.name = arguments.value("name", std::string());
    options.image = arguments.value("image", std::string());
    auto memory = SizeArgument(arguments, "memory_limit");
    if (!memory) return ToolError(memory.error());
    options.memory_bytes = *memory;
    auto disk = SizeArgument(arguments, "disk_limit");
    if (!disk) return ToolError(disk.error());
    options.disk_bytes = *disk;
    if (arguments.contains("cpu_limit")) options.cpus = arguments["cpu_limit"].get<double>();
    if (arguments.contains("pids_limit")) options.pids = arguments["pids_limit"].get<uint32_t>();
    if (arguments.contains("egress")) options.egress = arguments["egress"].get<bool>();
    auto info = context->sessions.Create(options);
    if (!info) return ToolError(info.error());
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(
        fmt::format("Created session {}{} (image {}, {} backend). Pass this "
                    "session_id to the other tools.\nLimits in force:\n{}",
                    info->id, info->name.empty() ? "" : " \"" + ValidUtf8(info->name) + "\"",
                    info->image, info->backend, LimitsText(*info)));
    Json structured = {{"session_id", info->id},
                       {"name", ValidUtf8(info->name)},
                       {"image", info->image},
                       {"backend", info->backend},
                       {"limits", LimitsJson(info->limits)},
                       {"enforced", EnforcedLimitsJson(info->enforced)}};
    if (!info->replica.empty()) structured["replica"] = info->replica;
    result.SetStructured(std::move(structured));
    return result.Build();
  };
  return tool;
}

Tool MakeListSessionsTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_list_sessions";
  tool.title = "List sessions";
  tool.description =
      "List the sandbox sessions with their state (idle, busy, or hibernated: saved to disk, "
      "resumed by the next call naming it), age, idle time, runs and resource usage, and what "
      "your saved sessions (hibernated, forked) take of your budget. Idle "
      "sessions hibernate (or close) by themselves after the server's TTL. Behind a "
      "proxy with several replicas, it lists the sessions of the replica that answers.";
  tool.input_schema = InputSchema(Json::object());
  tool.output_schema =
      OutputSchema({{"sessions", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                    {"max_sessions", {{"type", "integer"}}},
                    {"replica", kReplicaProperty},
                    {"pool", {{"type", "object"}}},
                    {"saved", {{"type", "object"}}}},
                   {"sessions"});
  tool.annotations = Annotations("List sessions", true, false, true);
  tool.handler = [context](ToolCall&, const Json&) {
    auto sessions = context->sessions.List();
    int max_sessions = context->sessions.config().max_sessions;
    // Hibernated sessions hold no sandbox and count towards no cap: say them apart.
    size_t hibernated =
        static_cast<size_t>(std::count_if(sessions.begin(), sessions.end(), [](const auto& info) {
          return info.state == "hibernated";
        }));
    std::string text =
        fmt::format("{} of at most {} session(s) open", sessions.size() - hibernated, max_sessions);
    if (hibernated > 0) text += fmt::format(", {} hibernated", hibernated);
    text += sessions.empty() ? ".\n" : ":\n";
    Json list = Json::array();
    for (const auto& info : sessions) {
      text += fmt::format(
          "  {}{}  {}  age {:.0f} s  idle {:.0f} s  runs {}  {} {}{}{}\n", info.id,
          info.name.empty() ? "" : " \"" + ValidUtf8(info.name) + "\"", info.state,
          SecondsSince(info.created), SecondsSince(info.last_used), info.runs,
          info.state == "hibernated" ? "saved" : "memory",
          FormatBytes(info.state == "hibernated" ? info.saved_bytes : info.usage.memory_bytes),
          info.data_bytes ? "  data " + FormatBytes(*info.data_bytes) : "",
          info.egress.enabled ? "  egress " + FormatBytes(info.egress.usage.bytes) : "");
      list.push_back(SessionJson(info));
    }
    Json structured{{"sessions", std::move(list)}, {"max_sessions", max_sessions}};
    const std::string& replica = context->sessions.config().replica_id;
    if (!replica.empty()) {
      structured["replica"] = replica;
      text += fmt::format("(on replica {})\n", replica);
    }
    if (auto saved = CallersSaved(context->sessions)) {
      const SavedBudget& budget = saved->budget;
      text += fmt::format("saved: {} session(s), {}", saved->usage.count,
                          FormatBytes(saved->usage.bytes));
      std::string caps;
      if (budget.max_saved > 0) caps = fmt::format("{} session(s)", budget.max_saved);
      if (budget.max_bytes > 0) {
        caps += (caps.empty() ? "" : ", ") + FormatBytes(budget.max_bytes);
      }
      text += caps.empty() ? "\n" : " (your budget: " + caps + ")\n";
      structured["saved"] = {{"count", saved->usage.count},
                             {"bytes", saved->usage.bytes},
                             {"max_saved", budget.max_saved},
                             {"max_bytes", budget.max_bytes},
                             {"server_max_bytes", context->sessions.config().saved_max_bytes}};
    }
    // Pooled sandboxes are no sessions (they count towards no cap), but they use memory.
    if (auto pool = context->sessions.PoolStatus()) {
      text += fmt::format("pool: {} of {} ready, {} starting, memory {}, {} taken so far\n",
                          pool->ready, pool->size, pool->starting, FormatBytes(pool->memory_bytes),
                          pool->claimed);
      structured["pool"] = {{"size", pool->size},         {"ready", pool->ready},
                            {"starting", pool->starting}, {"memory_bytes", pool->memory_bytes},
                            {"claimed", pool->claimed},   {"replaced", pool->replaced},
                            {"failed", pool->failed}};
    }
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(text);
    result.SetStructured(std::move(structured));
    return result.Build();
  };
  return tool;
}

Tool MakeSessionStatusTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_session_status";
  tool.title = "Session status";
  tool.description =
      "Show one session: state, image, backend, the limits actually in force (and how they are "
      "enforced), resource usage, and how long until it expires when idle.";
  tool.input_schema = SessionIdOnly();
  tool.output_schema = OutputSchema({{"session_id", {{"type", "string"}}},
                                     {"name", {{"type", "string"}}},
                                     {"state", {{"type", "string"}}},
                                     {"image", {{"type", "string"}}},
                                     {"backend", {{"type", "string"}}},
                                     {"age_s", {{"type", "integer"}}},
                                     {"idle_s", {{"type", "integer"}}},
                                     {"expires_in_s", {{"type", "integer"}}},
                                     {"runs", {{"type", "integer"}}},
                                     {"limits", {{"type", "object"}}},
                                     {"enforced", {{"type", "object"}}},
                                     {"usage", {{"type", "object"}}},
                                     {"egress", {{"type", "object"}}},
                                     {"saved_bytes", {{"type", "integer"}}},
                                     {"replica", kReplicaProperty}},
                                    {"session_id", "state"});
  tool.annotations = Annotations("Session status", true, false, true);
  tool.handler = [context](ToolCall&, const Json& arguments) {
    std::string id = arguments["session_id"].get<std::string>();
    auto info = context->sessions.Get(id);
    if (!info) return ToolError(info.error(), SessionIdExtra(id));
    double ttl_s = std::chrono::duration<double>(context->sessions.config().ttl).count();
    double idle = SecondsSince(info->last_used);
    int64_t expires_in = static_cast<int64_t>(std::max(0.0, ttl_s - idle));
    if (info->state == "hibernated") {
      // Saved on disk, no sandbox: it lasts the saved TTL; the next call resumes it.
      auto saved_ttl = context->sessions.config().saved_ttl;
      expires_in = static_cast<int64_t>(
          std::max(0.0, std::chrono::duration<double>(saved_ttl).count() - idle));
    }
    Json structured = SessionJson(*info);
    structured["expires_in_s"] = expires_in;
    structured["limits"] = LimitsJson(info->limits);
    structured["enforced"] = EnforcedLimitsJson(info->enforced);
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(fmt::format(
        "Session {}{}: {}, image {}, {} backend\nage {:.0f} s, idle {:.0f} s (closes after {} s "
        "more idle), {} run(s)\nusage: memory {} (peak {}), {} process(es), {:.2f} CPU s, {} OOM "
        "kill(s)\ndisk: {}\n{}limits in force ({}):\n{}",
        info->id, info->name.empty() ? "" : " \"" + ValidUtf8(info->name) + "\"", info->state,
        info->image, info->backend, SecondsSince(info->created), idle, expires_in, info->runs,
        FormatBytes(info->usage.memory_bytes), FormatBytes(info->usage.memory_peak_bytes),
        info->usage.pids, info->usage.cpu_seconds, info->usage.oom_kills, DiskText(*info),
        "egress: " + egress::EgressLine(info->egress, /*with_usage=*/true) + "\n" +
            (info->state == "hibernated"
                 ? fmt::format("hibernated: {} saved on disk, no sandbox running; the next call "
                               "naming it resumes it\n",
                               FormatBytes(info->saved_bytes))
                 : std::string()),
        info->enforced.cgroup_mode, LimitsText(*info)));
    result.SetStructured(std::move(structured));
    return result.Build();
  };
  return tool;
}

Tool MakeCloseSessionTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_close_session";
  tool.title = "Close session";
  tool.description =
      "Destroy a session and everything in it (processes, variables, files in /mnt/data, and "
      "what was saved of it when hibernated). A "
      "session that is running code gives session_busy unless force=true, which kills the run.";
  tool.input_schema = InputSchema(
      {{"session_id", SessionIdProperty(false)},
       {"force", Property("boolean", "Close even while a run is in progress (default false).")}},
      {"session_id"});
  tool.output_schema = OutputSchema(
      {{"session_id", {{"type", "string"}}},
       {"closed", {{"type", "boolean"}}},
       {"status", {{"type", "string"}, {"description", "\"closed\" (as the seed server says)"}}}},
      {"session_id", "closed"});
  tool.annotations = Annotations("Close session", false, true, true);
  tool.handler = [context](ToolCall&, const Json& arguments) {
    std::string id = arguments["session_id"].get<std::string>();
    if (auto closed = context->sessions.Close(id, arguments.value("force", false)); !closed) {
      return ToolError(closed.error(), SessionIdExtra(id));
    }
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(fmt::format("Closed session {}; its processes and files are gone.", id));
    result.SetStructured({{"session_id", id}, {"closed", true}, {"status", "closed"}});
    return result.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
