// The views' HTML documents, kept in mcp/apps/views/ and compiled into the binary at build time
// (embed_views.cmake writes embedded_views.cc): a view needs no file at run time.
#pragma once

#include <string_view>

namespace sandbox::mcp::apps {

struct EmbeddedView {
  std::string_view name;  // the file name in mcp/apps/views/, "table.html"
  std::string_view html;
};

// Every view, in the order of the file names.
extern const EmbeddedView kEmbeddedViews[];
extern const size_t kEmbeddedViewCount;

// The Python helper sandbox_view_table runs in the session (mcp/apps/views/table_page.py).
extern const std::string_view kTablePagePython;

}  // namespace sandbox::mcp::apps
