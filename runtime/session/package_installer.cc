#include "runtime/session/package_installer.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "runtime/base/quoted.h"
#include "runtime/sandbox_layout.h"

namespace sandbox {
namespace {

// The last `max_bytes` of pip's output: the lines that say what failed.
std::string Tail(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  return "..." + text.substr(text.size() - max_bytes);
}

}  // namespace

Status CheckCanInstall(const SessionConfig& config) {
  if (config.wheelhouse.empty()) {
    return Fail(ErrorCode::kInstallFailed,
                "this server has no wheelhouse (SANDBOX_WHEELHOUSE), and sandboxes have no "
                "network, so packages cannot be installed. Use what the image provides (numpy, "
                "pandas, matplotlib, scikit-learn, statsmodels, scipy, plotly, opencv and more), "
                "or ask the operator to "
                "set SANDBOX_WHEELHOUSE to a directory of wheels.");
  }
  return {};
}

Result<std::string> InstallPackages(SessionManager& sessions, const std::string& session_id,
                                    const InstallRequest& request, const OutputCallback& on_output,
                                    CancelToken* cancel) {
  for (const auto& spec : request.packages) {
    if (!IsPlainRequirement(spec)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "{} is not a package requirement (name, optional [extras] and version "
                  "specifiers only)",
                  Quoted(spec));
    }
  }
  SBX_TRY(CheckCanInstall(sessions.config()));
  RunRequest install;
  install.kind = RunRequest::Kind::kShell;
  install.timeout_s = request.timeout_s;
  install.code = fmt::format(
      "python3 -m pip install --user --no-index --find-links {} --disable-pip-version-check "
      "--no-input --no-warn-script-location --progress-bar off",
      layout::kWheelhouseDir);
  for (const auto& spec : request.packages) install.code += " '" + spec + "'";  // no quotes inside
  install.code += " 2>&1";
  SBX_ASSIGN_OR_RETURN(RunResult run, sessions.Run(session_id, install, on_output, cancel));
  if (run.timed_out)
    return Fail(ErrorCode::kTimeout, "pip did not finish in time: {}", Tail(run.stdout_text, 2000));
  if (run.oom)
    return Fail(ErrorCode::kOom, "pip ran out of memory: {}", Tail(run.stdout_text, 2000));
  if (run.cancelled) return Fail(ErrorCode::kCancelled, "the install was cancelled");
  if (run.exit_code != 0) {
    return Fail(ErrorCode::kInstallFailed, "pip failed (exit code {}):\n{}", run.exit_code,
                Tail(run.stdout_text, 4000));
  }
  // The running interpreter read sys.path at start: add the user site now.
  RunRequest activate;
  activate.kind = RunRequest::Kind::kPython;
  activate.timeout_s = std::min(10.0, sessions.config().exec_timeout_s);
  activate.code =
      "import importlib as _i, site as _s\n"
      "_s.addsitedir(_s.getusersitepackages())\n"
      "_i.invalidate_caches()\n"
      "del _i, _s\n";
  SBX_ASSIGN_OR_RETURN(RunResult activated, sessions.Run(session_id, activate, {}, cancel));
  if (activated.exit_code != 0) {
    return Fail(ErrorCode::kInstallFailed, "installed, but the session could not load them: {}",
                Tail(activated.stderr_text, 2000));
  }
  return Tail(run.stdout_text, 4000);
}

}  // namespace sandbox
