// sandbox_view_files: the session's /mnt/data for the files view. The listing is
// sandbox_list_artifacts' own (sizes, MIME types, times, download links), tied to the view; the
// view previews a file through sandbox_read_file (text) or sandbox_read_artifact (images),
// downloads it through the link, which the host opens (ui/open-link), and uploads through
// sandbox_upload_file. The listing also names the upload limit, so the view refuses a larger
// file before reading it into the page.
#include <memory>

#include <fmt/format.h>

#include "mcp/apps/ui_extension.h"
#include "mcp/apps/view_tools.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::apps {

Tool MakeViewFilesTool(SessionManager& sessions, const ToolSettings& settings) {
  auto context = std::make_shared<tools::ToolContext>(tools::ToolContext{sessions, settings});
  Tool tool = tools::MakeListArtifactsTool(context);
  tool.name = "sandbox_view_files";
  tool.title = "View files";
  tool.description = fmt::format(
      "Show the files of a session's /mnt/data (or a sub-path) to the user as a file browser: "
      "names, sizes, types and times, a preview of text files and images, a download button "
      "for each, and an upload button (files up to {}, into the listed folder). Use it when "
      "the user should look at, fetch or add the files a session works on; the text result "
      "lists them for you too.",
      FormatBytes(settings.max_upload_bytes));
  tool.output_schema["properties"]["max_upload_bytes"] = {{"type", "integer"}};
  tool.annotations = tools::Annotations("View files", true, false, true);
  tool.meta = ToolUiMeta(kFilesViewUri);
  tool.handler = [list = std::move(tool.handler), max_upload_bytes = settings.max_upload_bytes](
                     ToolCall& call, const Json& arguments) {
    Json result = list(call, arguments);
    if (!result.value("isError", false) && result.contains("structuredContent")) {
      result["structuredContent"]["max_upload_bytes"] = max_upload_bytes;
    }
    return result;
  };
  return tool;
}

}  // namespace sandbox::mcp::apps
