// sandbox_view_chart: a matplotlib figure of a session as SVG, for the chart view (zoom and pan
// in the view). The figure is drawn in the session; only its SVG crosses to the host.
#include <string>

#include <fmt/format.h>

#include "mcp/apps/ui_extension.h"
#include "mcp/apps/view_tools.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/quoted.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::apps {

namespace {

constexpr std::string_view kMarker = "\x1e_mcp_view_chart ";

// Draws the figure `source` names as SVG and prints it after the marker, as JSON. Binds no name
// that outlives it, and ends in a statement, so `_` stays as it was.
std::string ChartCode(const std::string& source) {
  return fmt::format(
      "def __mcp_view_chart(name):\n"
      "    import io, json, sys\n"
      "    try:\n"
      "        if not name.isidentifier():\n"
      "            raise ValueError('source must be a variable name')\n"
      "        if name not in globals():\n"
      "            raise NameError('the session has no variable %r' % name)\n"
      "        value = globals()[name]\n"
      "        figure = value if hasattr(value, 'savefig') else getattr(value, 'figure', None)\n"
      "        if figure is None or not hasattr(figure, 'savefig'):\n"
      "            raise TypeError('%s is a %s, not a matplotlib Figure or Axes' % (name, "
      "type(value).__name__))\n"
      "        buffer = io.StringIO()\n"
      "        figure.savefig(buffer, format='svg', bbox_inches='tight')\n"
      "        result = {{'svg': buffer.getvalue(), 'kind': 'matplotlib'}}\n"
      "    except Exception as error:\n"
      "        result = {{'error': '%s: %s' % (type(error).__name__, error)}}\n"
      "    sys.stdout.write({0} + json.dumps(result) + '\\n')\n"
      "__mcp_view_chart({1})\n"
      "del __mcp_view_chart\n",
      Json(std::string(kMarker)).dump(), Json(source).dump());
}

}  // namespace

Tool MakeViewChartTool(SessionManager& sessions, const ToolSettings& settings) {
  Tool tool;
  tool.name = "sandbox_view_chart";
  tool.title = "View a chart";
  tool.description =
      "Show a matplotlib figure of a session to the user as a zoomable SVG chart. Keep the "
      "figure in a variable (fig, ax = plt.subplots()) in sandbox_run_python, then pass its name "
      "(a Figure or an Axes). The run's PNG of the figure still comes to you as an image; this "
      "shows the user a sharp, zoomable copy.";
  tool.input_schema = tools::InputSchema(
      {{"session_id", tools::SessionIdProperty(false)},
       {"source",
        tools::Property("string", "A variable of the session holding a matplotlib Figure or Axes.",
                        {{"minLength", 1}, {"maxLength", 256}})}},
      {"session_id", "source"});
  tool.output_schema = tools::OutputSchema({{"session_id", {{"type", "string"}}},
                                            {"source", {{"type", "string"}}},
                                            {"kind", {{"type", "string"}}},
                                            {"svg", {{"type", "string"}}}},
                                           {"session_id", "source", "kind", "svg"});
  tool.annotations = tools::Annotations("View a chart", true, false, true);
  tool.meta = ToolUiMeta(kChartViewUri);
  tool.handler = [&sessions, settings](ToolCall&, const Json& arguments) -> Json {
    std::string session_id = arguments["session_id"].get<std::string>();
    std::string source = arguments["source"].get<std::string>();
    Json extra = tools::SessionIdExtra(session_id);
    RunRequest request;
    request.kind = RunRequest::Kind::kPython;
    request.code = ChartCode(source);
    request.timeout_s = settings.exec_timeout_s;
    request.max_output_bytes = settings.max_result_bytes;
    auto run = sessions.Run(session_id, std::move(request), nullptr, nullptr);
    if (!run) return ToolError(run.error(), extra);
    const std::string& out = run->stdout_text;
    size_t at = out.rfind(kMarker);
    if (run->stdout_truncated) {
      return ToolError(ErrorCode::kArtifactTooLarge,
                       fmt::format("the figure's SVG is larger than a result may be ({}); "
                                   "rasterize dense artists (rasterized=True) or plot fewer points",
                                   FormatBytes(settings.max_result_bytes)),
                       extra);
    }
    if (at == std::string::npos || run->exit_code != 0) {
      return ToolError(
          ErrorCode::kInternal,
          fmt::format(
              "the session did not return a chart (exit code {}){}", run->exit_code,
              run->stderr_text.empty() ? std::string() : ": " + Quoted(run->stderr_text, 400)),
          extra);
    }
    size_t start = at + kMarker.size();
    size_t end = out.find('\n', start);
    Json chart = Json::parse(
        out.substr(start, end == std::string::npos ? std::string::npos : end - start), nullptr,
        /*allow_exceptions=*/false);
    if (!chart.is_object()) {
      return ToolError(ErrorCode::kInternal, "the session returned a chart that is not JSON",
                       extra);
    }
    if (chart.contains("error")) {
      return ToolError(ErrorCode::kInvalidArgument, chart["error"].get<std::string>(), extra);
    }
    size_t svg_bytes = chart["svg"].get_ref<const std::string&>().size();
    chart["session_id"] = session_id;
    chart["source"] = source;
    ToolResultBuilder builder(settings.max_result_bytes);
    builder.AddText(fmt::format("Chart {}: a matplotlib figure, shown to the user as SVG ({}).",
                                source, FormatBytes(svg_bytes)));
    builder.SetStructured(std::move(chart));
    return builder.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::apps
