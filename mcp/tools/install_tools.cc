// sandbox_install_packages: pip installs from the wheelhouse mounted read-only at
// /mnt/wheelhouse, offline (--no-index), into the session user's site (HOME=/tmp, so
// /tmp/.local), which new interpreters find by themselves; the running one is told with
// site.addsitedir.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/run_output.h"

namespace sandbox::mcp::tools {

namespace {

// A requirement like "pandas", "scikit-learn==1.5.0", "requests[socks]>=2,<3": letters,
// digits and . _ - [ ] , = < > ! ~ * +, starting with a letter or digit. Anything else (spaces,
// quotes, options such as --index-url) is refused before it reaches a shell.
bool IsPlainRequirement(const std::string& spec) {
  if (spec.empty() || spec.size() > 200 || !std::isalnum(static_cast<unsigned char>(spec[0]))) {
    return false;
  }
  return std::all_of(spec.begin(), spec.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("._-[],=<>!~*+").find(c) != std::string_view::npos;
  });
}

// The tail of pip's output: the lines that say what failed.
std::string Tail(const std::string& text, size_t max_bytes) {
  std::string clean = ValidUtf8(text);
  if (clean.size() <= max_bytes) return clean;
  return "…" + std::string(Utf8Suffix(clean, max_bytes));
}

}  // namespace

Tool MakeInstallPackagesTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_install_packages";
  tool.title = "Install Python packages";
  tool.description =
      "pip-install Python packages into a session, offline from the server's wheelhouse "
      "(SANDBOX_WHEELHOUSE); they are importable right away in that session. Check first "
      "whether the package is already there (the default image has numpy, pandas, matplotlib, "
      "seaborn, scipy, openpyxl, reportlab). Omit session_id to start a new session. Installs "
      "from the package index are not available (sandboxes have no network).";
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
  tool.annotations = Annotations("Install Python packages", false, false, true);
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    std::vector<std::string> packages;
    for (const auto& item : arguments["packages"]) {
      std::string spec = item.get<std::string>();
      if (!IsPlainRequirement(spec)) {
        return ToolError(ErrorCode::kInvalidArgument,
                         fmt::format("'{}' is not a package requirement (name, optional "
                                     "[extras] and version specifiers only)",
                                     ValidUtf8(Utf8Prefix(spec, 200))));
      }
      packages.push_back(std::move(spec));
    }
    if (!context->settings.wheelhouse) {
      return ToolError(
          ErrorCode::kInstallFailed,
          "this server has no wheelhouse (SANDBOX_WHEELHOUSE), and sandboxes have no network, so "
          "packages cannot be installed; installs from the package index come with network "
          "egress in a later version. Use what the image provides (numpy, pandas, matplotlib, "
          "seaborn, scipy, openpyxl, reportlab), or ask the operator to set SANDBOX_WHEELHOUSE "
          "to a directory of wheels.");
    }
    auto session = ResolveSession(*context, call, arguments);
    if (!session) return ToolError(session.error());
    Json extra = {{"session_id", session->id}, {"packages", packages}};
    if (session->created) extra["session_created"] = true;

    std::string note;
    RunRequest install;
    install.kind = RunRequest::Kind::kShell;
    install.timeout_s = RunTimeout(*context, arguments, &note);
    install.max_output_bytes = context->settings.max_output_bytes;
    install.code =
        "python3 -m pip install --user --no-index --find-links /mnt/wheelhouse "
        "--disable-pip-version-check --no-input --no-warn-script-location --progress-bar off";
    for (const auto& spec : packages) install.code += " '" + spec + "'";  // no quotes inside
    install.code += " 2>&1";

    CancelToken token;
    auto cancel_link = call.OnCancel([&token] { token.Cancel(); });
    auto progress = call.StartProgress(install.timeout_s);
    OutputCallback on_output;
    if (progress) {
      on_output = [&progress](int stream, std::string_view chunk) {
        progress->OnOutput(stream, chunk);
      };
    }
    auto run = context->sessions.Run(session->id, install, on_output, &token);
    progress.reset();
    if (!run) return ToolError(run.error(), extra);
    if (auto code = RunErrorCode(*run)) {
      return ToolError(*code, fmt::format("pip did not finish: {}", Tail(run->stdout_text, 2000)),
                       extra);
    }
    if (run->exit_code != 0) {
      return ToolError(ErrorCode::kInstallFailed,
                       fmt::format("pip failed (exit code {}):\n{}", run->exit_code,
                                   Tail(run->stdout_text, 4000)),
                       extra);
    }
    // The running interpreter read sys.path at start: add the user site now.
    RunRequest activate;
    activate.kind = RunRequest::Kind::kPython;
    activate.timeout_s = std::min(10.0, context->settings.exec_timeout_s);
    activate.code =
        "import importlib as _i, site as _s\n"
        "_s.addsitedir(_s.getusersitepackages())\n"
        "_i.invalidate_caches()\n"
        "del _i, _s\n";
    auto activated = context->sessions.Run(session->id, activate, {}, &token);
    cancel_link.reset();
    if (!activated) return ToolError(activated.error(), extra);
    if (activated->exit_code != 0) {
      return ToolError(ErrorCode::kInstallFailed,
                       fmt::format("installed, but the session could not load them: {}",
                                   Tail(activated->stderr_text, 2000)),
                       extra);
    }
    std::string output = Tail(run->stdout_text, 4000);
    ToolResultBuilder result(context->settings.max_result_bytes);
    std::string text = fmt::format("Installed {} in session {}; import them in sandbox_run_python.",
                                   fmt::join(packages, ", "), session->id);
    if (session->created) {
      text += fmt::format(" A new session was created: pass session_id \"{}\".", session->id);
    }
    if (!note.empty()) text += "\nNote: " + note;
    result.AddText(text + "\n--- pip ---\n" + output);
    Json structured = {{"session_id", session->id}, {"packages", packages}, {"output", output}};
    if (session->created) structured["session_created"] = true;
    result.SetStructured(std::move(structured));
    return result.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
