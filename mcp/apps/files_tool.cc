// sandbox_view_files: the session's /mnt/data for the files view. The listing is
// sandbox_list_artifacts' own (sizes, MIME types, times, download links), tied to the view; the
// view previews a file through sandbox_read_file (text) or sandbox_read_artifact (images), and
// downloads it through the link, which the host opens (ui/open-link).
#include <memory>

#include "mcp/apps/ui_extension.h"
#include "mcp/apps/view_tools.h"
#include "mcp/tools/tool_support.h"

namespace sandbox::mcp::apps {

Tool MakeViewFilesTool(SessionManager& sessions, const ToolSettings& settings) {
  auto context = std::make_shared<tools::ToolContext>(tools::ToolContext{sessions, settings});
  Tool tool = tools::MakeListArtifactsTool(context);
  tool.name = "sandbox_view_files";
  tool.title = "View files";
  tool.description =
      "Show the files of a session's /mnt/data (or a sub-path) to the user as a file browser: "
      "names, sizes, types and times, a preview of text files and images, and a download "
      "button for each. Use it when the user should look at or fetch the files a session "
      "made; the text result lists them for you too.";
  tool.annotations = tools::Annotations("View files", true, false, true);
  tool.meta = ToolUiMeta(kFilesViewUri);
  return tool;
}

}  // namespace sandbox::mcp::apps
