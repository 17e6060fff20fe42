// sandbox_view_chart: a figure of a session for the chart view. A matplotlib figure comes as SVG
// (zoom and pan in the view); a Plotly figure as its JSON (fig.to_json()), which the view draws
// itself as an interactive SVG chart (hover, zoom). The figure is drawn or serialized in the
// session; only the SVG or the JSON crosses to the host.
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mcp/apps/session_json.h"
#include "mcp/apps/ui_extension.h"
#include "mcp/apps/view_tools.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::apps {

namespace {

// The Plotly trace types the chart view draws (mcp/apps/views/chart.html); any other is named
// in the view and in the text the model gets, and not drawn.
const char* const kDrawnPlotlyTypes[] = {"scatter", "scattergl", "bar", "histogram"};

// Serializes the figure `source` names: a matplotlib Figure (or Axes) as SVG, a Plotly figure as
// fig.to_json() without its template (tens of KB of styles for trace types the view does not
// draw), keeping the template's colorway and plot background. Binds no name that outlives the
// run (RunForView).
std::string ChartCode(const std::string& source) {
  return fmt::format(
      "def __mcp_view_result():\n"
      "    import io, json\n"
      "    name = {0}\n"
      "    if not name.isidentifier():\n"
      "        raise ValueError('source must be a variable name')\n"
      "    if name not in globals():\n"
      "        raise NameError('the session has no variable %r' % name)\n"
      "    value = globals()[name]\n"
      "    if type(value).__module__.startswith('plotly.') and hasattr(value, 'to_json'):\n"
      "        figure = json.loads(value.to_json())\n"
      "        layout = figure.setdefault('layout', {{}})\n"
      "        template = (layout.pop('template', None) or {{}}).get('layout') or {{}}\n"
      "        for key in ('colorway', 'plot_bgcolor'):\n"
      "            if key in template and key not in layout:\n"
      "                layout[key] = template[key]\n"
      "        return {{'figure': figure, 'kind': 'plotly'}}\n"
      "    figure = value if hasattr(value, 'savefig') else getattr(value, 'figure', None)\n"
      "    if figure is None or not hasattr(figure, 'savefig'):\n"
      "        raise TypeError('%s is a %s, not a matplotlib Figure or Axes or a Plotly figure' "
      "% (name, type(value).__name__))\n"
      "    buffer = io.StringIO()\n"
      "    figure.savefig(buffer, format='svg', bbox_inches='tight')\n"
      "    return {{'svg': buffer.getvalue(), 'kind': 'matplotlib'}}\n",
      Json(source).dump());
}

bool IsDrawn(const std::string& type) {
  for (const char* drawn : kDrawnPlotlyTypes) {
    if (type == drawn) return true;
  }
  return false;
}

// What the model reads about a Plotly figure: its title, its traces by type, and the types the
// view does not draw.
std::string PlotlyText(const std::string& source, const Json& figure) {
  std::map<std::string, int> drawn;
  std::map<std::string, int> skipped;
  Json data = figure.value("data", Json::array());
  if (!data.is_array()) data = Json::array();
  for (const auto& trace : data) {
    Json type_value = trace.is_object() ? trace.value("type", Json("scatter")) : Json("?");
    std::string type = type_value.is_string() ? type_value.get<std::string>() : "?";
    (IsDrawn(type) ? drawn : skipped)[type] += 1;
  }
  auto list = [](const std::map<std::string, int>& counts) {
    std::vector<std::string> parts;
    parts.reserve(counts.size());
    for (const auto& [type, count] : counts) parts.push_back(fmt::format("{} {}", count, type));
    return fmt::format("{}", fmt::join(parts, ", "));
  };
  std::string text = fmt::format("Chart {}: a Plotly figure with {} traces", source, data.size());
  if (!drawn.empty()) text += fmt::format(" ({})", list(drawn));
  text += ", shown to the user as an interactive chart (hover, zoom).";
  if (!skipped.empty()) {
    text += fmt::format(" The view does not draw {} (it draws scatter, bar and histogram traces).",
                        list(skipped));
  }
  return text;
}

}  // namespace

Tool MakeViewChartTool(SessionManager& sessions, const ToolSettings& settings) {
  Tool tool;
  tool.name = "sandbox_view_chart";
  tool.title = "View a chart";
  tool.description =
      "Show a figure of a session to the user as an interactive chart. Keep the figure in a "
      "variable in sandbox_run_python, then pass its name:\n"
      "- a Plotly figure (fig = px.line(df, x=..., y=...) or go.Figure(...)): drawn with hover "
      "and zoom; scatter/line, bar and histogram traces (other trace types are named, not "
      "drawn);\n"
      "- a matplotlib Figure or Axes (fig, ax = plt.subplots()): a sharp SVG the user zooms "
      "and pans; the run's PNG of it still comes to you as an image.\n"
      "A run shows no view by itself: call this after the run that made the figure.";
  tool.input_schema = tools::InputSchema(
      {{"session_id", tools::SessionIdProperty(false)},
       {"source", tools::Property("string",
                                  "A variable of the session holding a Plotly figure or a "
                                  "matplotlib Figure or Axes.",
                                  {{"minLength", 1}, {"maxLength", 256}})}},
      {"session_id", "source"});
  tool.output_schema = tools::OutputSchema({{"session_id", {{"type", "string"}}},
                                            {"source", {{"type", "string"}}},
                                            {"kind", {{"enum", {"matplotlib", "plotly"}}}},
                                            {"svg", {{"type", "string"}}},
                                            {"figure", {{"type", "object"}}}},
                                           {"session_id", "source", "kind"});
  tool.annotations = tools::Annotations("View a chart", true, false, true);
  tool.meta = ToolUiMeta(kChartViewUri);
  tool.handler = [&sessions, settings](ToolCall&, const Json& arguments) -> Json {
    std::string session_id = arguments["session_id"].get<std::string>();
    std::string source = arguments["source"].get<std::string>();
    auto chart = RunForView(sessions, settings,
                            {session_id, ChartCode(source), "chart",
                             "rasterize dense matplotlib artists (rasterized=True) or plot fewer "
                             "points"});
    if (!chart) return ToolError(chart.error(), tools::SessionIdExtra(session_id));
    // The session's interpreter is the user's: what it printed is checked before it is read.
    const Json& figure = chart->value("figure", Json());
    const Json& svg = chart->value("svg", Json());
    std::string text;
    if (chart->value("kind", "") == "plotly" && figure.is_object()) {
      text = PlotlyText(source, figure);
    } else if (chart->value("kind", "") == "matplotlib" && svg.is_string()) {
      text = fmt::format("Chart {}: a matplotlib figure, shown to the user as SVG ({}).", source,
                         FormatBytes(svg.get_ref<const std::string&>().size()));
    } else {
      return ToolError(ErrorCode::kInternal, "the session returned a chart of no known kind",
                       tools::SessionIdExtra(session_id));
    }
    (*chart)["session_id"] = session_id;
    (*chart)["source"] = source;
    ToolResultBuilder builder(settings.max_result_bytes);
    builder.AddText(text);
    builder.SetStructured(std::move(*chart));
    return builder.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::apps
