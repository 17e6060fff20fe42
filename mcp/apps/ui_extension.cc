#include "mcp/apps/ui_extension.h"

#include <string>

#include "mcp/apps/embedded_views.h"

namespace sandbox::mcp::apps {

namespace {

struct ViewResource {
  const char* uri;
  const char* file;  // in mcp/apps/views/
  const char* name;
  const char* description;
};

constexpr ViewResource kViews[] = {
    {kTableViewUri, "table.html", "table-view",
     "A pandas DataFrame or a CSV/Parquet file of a session as a sortable, filterable, paged "
     "table (the view of sandbox_view_table)."},
    {kFilesViewUri, "files.html", "files-view",
     "A session's /mnt/data as a file browser with previews, downloads and uploads (the view "
     "of sandbox_view_files)."},
    {kChartViewUri, "chart.html", "chart-view",
     "A Plotly figure of a session as an interactive chart, or a matplotlib figure as a "
     "zoomable SVG (the view of sandbox_view_chart)."},
};

std::string_view EmbeddedHtml(std::string_view file) {
  for (size_t i = 0; i < kEmbeddedViewCount; ++i) {
    if (kEmbeddedViews[i].name == file) return kEmbeddedViews[i].html;
  }
  return {};
}

// The view's _meta.ui: no CSP domains (the host's default: no network, nothing from outside the
// document), no permissions, and a border (a table reads better framed).
Json ResourceUiMeta() {
  return {{"ui",
           {{"csp",
             {{"connectDomains", Json::array()},
              {"resourceDomains", Json::array()},
              {"frameDomains", Json::array()},
              {"baseUriDomains", Json::array()}}},
            {"prefersBorder", true}}}};
}

}  // namespace

bool DeclaresUi(const Json& capabilities) {
  if (!capabilities.is_object()) return false;
  auto extensions = capabilities.find("extensions");
  if (extensions == capabilities.end() || !extensions->is_object()) return false;
  auto ui = extensions->find(kUiExtensionId);
  if (ui == extensions->end() || !ui->is_object()) return false;
  auto types = ui->find("mimeTypes");
  if (types == ui->end()) return true;  // required by the extension, but lenient on absence
  if (!types->is_array()) return false;
  for (const auto& type : *types) {
    if (type.is_string() && type.get<std::string>() == kUiMimeType) return true;
  }
  return false;
}

Json UiResourceList() {
  Json list = Json::array();
  for (const auto& view : kViews) {
    list.push_back({{"uri", view.uri},
                    {"name", view.name},
                    {"description", view.description},
                    {"mimeType", kUiMimeType},
                    {"size", EmbeddedHtml(view.file).size()},
                    {"_meta", ResourceUiMeta()}});
  }
  return list;
}

std::optional<Json> ReadUiResource(std::string_view uri) {
  for (const auto& view : kViews) {
    if (uri != view.uri) continue;
    return Json::array({{{"uri", view.uri},
                         {"mimeType", kUiMimeType},
                         {"text", std::string(EmbeddedHtml(view.file))},
                         {"_meta", ResourceUiMeta()}}});
  }
  return std::nullopt;
}

Json ToolUiMeta(std::string_view resource_uri) {
  return {{"ui", {{"resourceUri", resource_uri}}}, {"ui/resourceUri", resource_uri}};
}

}  // namespace sandbox::mcp::apps
