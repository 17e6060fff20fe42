// sandbox_install_packages: the MCP face of the session layer's installer
// (runtime/session/package_installer.h): arguments in, a result or an error out.
#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/run_call.h"
#include "mcp/tools/run_output.h"
#include "rootfs/recipe/image_batteries.h"
#include "runtime/session/package_installer.h"

namespace sandbox::mcp::tools {

Tool MakeInstallPackagesTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_install_packages";
  tool.title = "Install Python packages";
  const SessionConfig& config = context->sessions.config();
  std::string sources;
  if (config.egress.enabled()) {
    sources = fmt::format(
        "from the package index {}{} through the sandbox's egress proxy",
        config.egress.index_url.empty() ? "pip is configured with" : config.egress.index_url,
        config.wheelhouse.empty() ? "" : " (the server's wheelhouse is tried first, offline)");
  } else {
    sources = "offline from the server's wheelhouse (SANDBOX_WHEELHOUSE)";
  }
  tool.description = fmt::format(
      "pip-install Python packages into a session, {}; they are importable right away in that "
      "session. Check first whether the package is already there (the default image has {}). "
      "Omit session_id to start a new session. {}",
      sources, rootfs::DefaultImageBatteryNames(),
      config.egress.enabled()
          ? "A session created with egress=false installs from the wheelhouse only."
          : "Installs from a package index are not available (sandboxes have no network).");
  tool.input_schema = InputSchema(
      {{"packages", Property("array", "Requirements such as \"tabulate\" or \"xlsxwriter==3.2.0\".",
                             {{"items", {{"type", "string"}, {"minLength", 1}}},
                              {"minItems", 1},
                              {"maxItems", 50}})},
       {"session_id", SessionIdProperty(true)},
       {"timeout_s",
        Property("number", "Seconds the install may take (default and maximum: the server's).",
                 {{"exclusiveMinimum", 0}})}},
      {"packages"});
  tool.output_schema =
      OutputSchema({{"session_id", {{"type", "string"}}},
                    {"session_created", {{"type", "boolean"}}},
                    {"packages", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                    {"output", {{"type", "string"}}}},
                   {"session_id", "packages"});
  tool.annotations =
      Annotations("Install Python packages", false, false, true, RunsCodeWithNetwork(*context));
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    InstallRequest request;
    for (const auto& item : arguments["packages"]) {
      request.packages.push_back(item.get<std::string>());
    }
    // Refused before a session is made for it.
    for (const auto& spec : request.packages) {
      if (!IsPlainRequirement(spec)) {
        return ToolError(ErrorCode::kInvalidArgument,
                         fmt::format("'{}' is not a package requirement (name, optional "
                                     "[extras] and version specifiers only)",
                                     ValidUtf8(Utf8Prefix(spec, 200))));
      }
    }
    if (auto can = CheckCanInstall(context->sessions.config()); !can) {
      return ToolError(can.error());
    }
    auto session = ResolveSession(*context, call, arguments);
    if (!session) return ToolError(session.error());
    Json extra = {{"session_id", session->id}, {"packages", request.packages}};
    if (session->created) extra["session_created"] = true;

    std::string note;
    request.timeout_s = RunTimeout(*context, arguments, &note);
    auto installed = WithProgressAndCancel(
        call, request.timeout_s, [&](const OutputCallback& on_output, CancelToken* token) {
          return InstallPackages(context->sessions, session->id, request, on_output, token);
        });
    if (!installed) return ToolError(installed.error(), extra);

    std::string output = ValidUtf8(*installed);
    ToolResultBuilder result(context->settings.max_result_bytes);
    std::string text = fmt::format("Installed {} in session {}; import them in sandbox_run_python.",
                                   fmt::join(request.packages, ", "), session->id);
    if (session->created) {
      text += fmt::format(" A new session was created: pass session_id \"{}\".", session->id);
    }
    if (!note.empty()) text += "\nNote: " + note;
    result.AddText(text + "\n--- pip ---\n" + output);
    Json structured = {
        {"session_id", session->id}, {"packages", request.packages}, {"output", output}};
    if (session->created) structured["session_created"] = true;
    result.SetStructured(std::move(structured));
    return result.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
