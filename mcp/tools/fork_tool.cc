// sandbox_fork_session: a new session with a copy of another's files and Python state
// (docs/sessions.md "Hibernate, resume, fork"). Agents use it to try two approaches from one point.
#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::tools {

Tool MakeForkSessionTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_fork_session";
  tool.title = "Fork session";
  tool.description =
      "Make a new session that starts as a copy of this one: its files in /mnt/data and its "
      "Python state (variables, functions, classes, imports, working directory). The original "
      "is untouched; the two diverge from here. Returns the new session_id. Open sockets and "
      "running threads are not copied (the first call in the new session lists them).";
  tool.input_schema = InputSchema({{"session_id", SessionIdProperty(false)}}, {"session_id"});
  tool.output_schema = OutputSchema({{"session_id", {{"type", "string"}}},
                                     {"forked_from", {{"type", "string"}}},
                                     {"state", {{"type", "string"}}},
                                     {"saved_bytes", {{"type", "integer"}}}},
                                    {"session_id", "forked_from"});
  tool.annotations = Annotations("Fork session", false, false, false);
  tool.handler = [context](ToolCall&, const Json& arguments) {
    std::string id = arguments["session_id"].get<std::string>();
    auto fork = context->sessions.Fork(id);
    if (!fork) return ToolError(fork.error(), SessionIdExtra(id));
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(fmt::format(
        "Forked session {} as {} ({} of files and state copied). Pass session_id \"{}\" to work "
        "in the copy; its first call starts its sandbox.",
        id, fork->id, FormatBytes(fork->saved_bytes), fork->id));
    result.SetStructured({{"session_id", fork->id},
                          {"forked_from", id},
                          {"state", fork->state},
                          {"saved_bytes", fork->saved_bytes}});
    return result.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
