// sandbox_view_table: one page of a DataFrame (or a CSV/Parquet file) of a session, for the
// table view. The host calls it for the model, and the view calls it again for each page, sort
// and filter: the frame stays in the session, and only a page crosses to the host. The page is
// cut by views/table_page.py, run in the session's interpreter.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "mcp/apps/embedded_views.h"
#include "mcp/apps/session_json.h"
#include "mcp/apps/ui_extension.h"
#include "mcp/apps/view_tools.h"
#include "mcp/tools/tool_support.h"

namespace sandbox::mcp::apps {

namespace {

constexpr int kDefaultPageRows = 50;
constexpr int kMaxPageRows = 200;
// Rows of the page the text content shows the model (the view shows the whole page).
constexpr size_t kTextRows = 10;
// The code the session runs: the helper module, defined once per interpreter, then one page.
// Every name it binds is deleted again (RunForView), so the session's names stay as they were.
std::string PageCode(const Json& arguments) {
  return fmt::format(
      "def __mcp_view_result():\n"
      "    import sys, types\n"
      "    module = sys.modules.get('_mcp_views')\n"
      "    if module is None or getattr(module, 'SOURCE', None) != {0}:\n"
      "        module = types.ModuleType('_mcp_views')\n"
      "        exec({0}, module.__dict__)\n"
      "        module.SOURCE = {0}\n"
      "        sys.modules['_mcp_views'] = module\n"
      "    return module.page(globals(), {1})\n",
      Json(std::string(kTablePagePython)).dump(), Json(arguments.dump()).dump());
}

std::string CellText(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// What the model reads: the shape, the columns and the first rows of the page, tab-separated.
std::string PageText(const std::string& source, const Json& page) {
  std::string text = fmt::format("Table {}: {} rows", source, page["total_rows"].get<int64_t>());
  if (page["matched_rows"] != page["total_rows"]) {
    text += fmt::format(" ({} match the filter)", page["matched_rows"].get<int64_t>());
  }
  std::vector<std::string> names;
  for (const auto& column : page["columns"]) {
    names.push_back(fmt::format("{} ({})", column["name"].get<std::string>(),
                                column["dtype"].get<std::string>()));
  }
  text += fmt::format(" x {} columns: {}.\n", names.size(), fmt::join(names, ", "));
  const Json& rows = page["rows"];
  int64_t offset = page["offset"].get<int64_t>();
  if (rows.empty()) return text + "No rows on this page.";
  text += fmt::format("Rows {} to {} are in the view; the first of them:\n", offset + 1,
                      offset + static_cast<int64_t>(rows.size()));
  for (size_t i = 0; i < std::min(rows.size(), kTextRows); ++i) {
    std::vector<std::string> cells = {CellText(page["index"][i])};
    for (const auto& cell : rows[i]) cells.push_back(CellText(cell));
    text += fmt::format("{}\n", fmt::join(cells, "\t"));
  }
  return text;
}

Json OutputSchema() {
  Json column = {{"type", "object"},
                 {"properties", {{"name", {{"type", "string"}}}, {"dtype", {{"type", "string"}}}}}};
  return tools::OutputSchema(
      {{"session_id", {{"type", "string"}}},
       {"source", {{"type", "string"}}},
       {"columns", {{"type", "array"}, {"items", column}}},
       {"total_rows", {{"type", "integer"}}},
       {"matched_rows", {{"type", "integer"}}},
       {"offset", {{"type", "integer"}}},
       {"limit", {{"type", "integer"}}},
       {"sort_by", {{"type", {"string", "null"}}}},
       {"descending", {{"type", "boolean"}}},
       {"filter", {{"type", "string"}}},
       {"index", {{"type", "array"}}},
       {"rows", {{"type", "array"}, {"items", {{"type", "array"}}}}}},
      {"session_id", "source", "columns", "total_rows", "matched_rows", "offset", "rows"});
}

}  // namespace

Tool MakeViewTableTool(SessionManager& sessions, const ToolSettings& settings) {
  Tool tool;
  tool.name = "sandbox_view_table";
  tool.title = "View a table";
  tool.description = fmt::format(
      "Show a pandas DataFrame of a session (a variable name, e.g. df) or a CSV, TSV or "
      "Parquet file in /mnt/data (e.g. sales.csv) to the user as an interactive table they "
      "can sort, filter and page through. Use it after sandbox_run_python has built the frame, "
      "when the user should look at the data rather than read a summary. Only one page (up "
      "to {} rows) leaves the session, so any size of frame is fine. The text result gives "
      "you the shape, the columns and the first rows. A run shows no view by itself: call this "
      "after the run that made the frame.",
      kMaxPageRows);
  tool.input_schema = tools::InputSchema(
      {{"session_id", tools::SessionIdProperty(false)},
       {"source", tools::Property("string",
                                  "A DataFrame (or Series) variable of the session, or a "
                                  ".csv/.tsv/.parquet file (relative to /mnt/data).",
                                  {{"minLength", 1}, {"maxLength", 4096}})},
       {"offset",
        tools::Property("integer", "First row of the page (default 0).", {{"minimum", 0}})},
       {"limit",
        tools::Property("integer", fmt::format("Rows per page (default {}).", kDefaultPageRows),
                        {{"minimum", 1}, {"maximum", kMaxPageRows}})},
       {"sort_by", tools::Property("string", "Sort by this column.")},
       {"descending", tools::Property("boolean", "Sort descending (default false).")},
       {"filter", tools::Property("string",
                                  "Keep rows where some cell contains this text "
                                  "(case-insensitive).",
                                  {{"maxLength", 1000}})}},
      {"session_id", "source"});
  tool.output_schema = OutputSchema();
  tool.annotations = tools::Annotations("View a table", true, false, true);
  tool.meta = ToolUiMeta(kTableViewUri);
  tool.handler = [&sessions, settings](ToolCall&, const Json& arguments) -> Json {
    std::string session_id = arguments["session_id"].get<std::string>();
    std::string source = arguments["source"].get<std::string>();
    Json page_arguments = {{"source", source},
                           {"offset", arguments.value("offset", 0)},
                           {"limit", arguments.value("limit", kDefaultPageRows)},
                           {"sort_by", arguments.value("sort_by", Json(nullptr))},
                           {"descending", arguments.value("descending", false)},
                           {"filter", arguments.value("filter", std::string())}};
    auto page =
        RunForView(sessions, settings,
                   {session_id, PageCode(page_arguments), "page", "ask for fewer rows (limit)"});
    if (!page) return ToolError(page.error(), tools::SessionIdExtra(session_id));
    (*page)["session_id"] = session_id;
    (*page)["source"] = source;
    for (const char* key : {"limit", "sort_by", "descending", "filter"}) {
      (*page)[key] = page_arguments[key];
    }
    ToolResultBuilder builder(settings.max_result_bytes);
    builder.AddText(PageText(source, *page));
    builder.SetStructured(std::move(*page));
    return builder.Build();
  };
  return tool;
}

std::vector<Tool> ViewTools(SessionManager& sessions, const ToolSettings& settings) {
  return {MakeViewTableTool(sessions, settings), MakeViewFilesTool(sessions, settings),
          MakeViewChartTool(sessions, settings)};
}

}  // namespace sandbox::mcp::apps
