// The MCP Apps extension (io.modelcontextprotocol/ui): how a client declares it, and the ui://
// view resources this server serves to a client that did. A client that does not declare it
// sees none of it: the same capabilities, tools/list and resources/list as before.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sandbox::mcp::apps {

using Json = nlohmann::json;

inline constexpr char kUiExtensionId[] = "io.modelcontextprotocol/ui";
// The MIME type of a view resource (the extension's RESOURCE_MIME_TYPE).
inline constexpr char kUiMimeType[] = "text/html;profile=mcp-app";

// Whether ClientCapabilities `capabilities` declare the extension: extensions[kUiExtensionId]
// is an object whose mimeTypes (when given) include kUiMimeType. 2025-11-25 clients put it in
// initialize's capabilities, 2026-07-28 clients in every request's _meta.
bool DeclaresUi(const Json& capabilities);

// The view resources (ui://mcp-sandbox/table, ...): the entries resources/list adds, and the
// `contents` of resources/read, or nullopt for a URI that is not one of them.
Json UiResourceList();
std::optional<Json> ReadUiResource(std::string_view uri);

// A tool's _meta that ties it to the view at `resource_uri`: both the current key (ui.resourceUri)
// and the deprecated flat one, which hosts of the first release still read.
Json ToolUiMeta(std::string_view resource_uri);

// The ui:// URIs of the views.
inline constexpr char kTableViewUri[] = "ui://mcp-sandbox/table.html";
inline constexpr char kFilesViewUri[] = "ui://mcp-sandbox/files.html";
inline constexpr char kChartViewUri[] = "ui://mcp-sandbox/chart.html";

}  // namespace sandbox::mcp::apps
