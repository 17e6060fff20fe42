// The tools that produce MCP Apps views (mcp/apps/ui_extension.h), listed and callable only for
// clients that declare the extension (ServerOptions::ui_tools).
#pragma once

#include <vector>

#include "mcp/tool.h"
#include "mcp/tools/sandbox_tools.h"

namespace sandbox::mcp::apps {

std::vector<Tool> ViewTools(SessionManager& sessions, const ToolSettings& settings);

// sandbox_view_table (table_tool.cc), sandbox_view_files (files_tool.cc) and
// sandbox_view_chart (chart_tool.cc).
Tool MakeViewTableTool(SessionManager& sessions, const ToolSettings& settings);
Tool MakeViewFilesTool(SessionManager& sessions, const ToolSettings& settings);
Tool MakeViewChartTool(SessionManager& sessions, const ToolSettings& settings);

}  // namespace sandbox::mcp::apps
