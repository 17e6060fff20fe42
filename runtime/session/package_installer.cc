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
  if (config.wheelhouse.empty() && !config.egress.enabled()) {
    return Fail(ErrorCode::kInstallFailed,
                "this server has no wheelhouse (SANDBOX_WHEELHOUSE), and sandboxes have no "
                "network, so packages cannot be installed. Use what the image provides (numpy, "
                "pandas, matplotlib, scikit-learn, statsmodels, scipy, plotly, opencv and more), "
                "or ask the operator to "
                "set SANDBOX_WHEELHOUSE to a directory of wheels, or SANDBOX_EGRESS_ALLOW to let "
                "sandboxes reach a package index.");
  }
  return {};
}

namespace {

// The pip command for one source: the wheelhouse alone (offline), or the index through the
// session's egress proxy (the proxy variables are in the sandbox's environment). What pip would
// do beyond installing is left out, for time (tools/bench.d/egress.sh): --no-warn-conflicts
// skips the report that reads the metadata of every installed distribution (half of pip's time
// for a small wheel in the default image; `pip check` gives it on demand), --no-cache-dir writes
// no cache to the session's tmpfs. pip still byte-compiles: sandboxes run with
// PYTHONDONTWRITEBYTECODE, so without it every new worker would compile the package again.
std::string PipCommand(const std::vector<std::string>& packages, bool offline,
                       const std::string& index_url, const std::string& wheelhouse) {
  std::string command =
      "python3 -m pip install --user --disable-pip-version-check --no-input "
      "--no-warn-script-location --progress-bar off --no-warn-conflicts --no-cache-dir";
  if (offline) {
    command += fmt::format(" --no-index --find-links {}", layout::kWheelhouseDir);
  } else {
    if (!index_url.empty()) command += " --index-url '" + index_url + "'";  // checked at start
    if (!wheelhouse.empty()) command += fmt::format(" --find-links {}", layout::kWheelhouseDir);
  }
  for (const auto& spec : packages) command += " '" + spec + "'";  // no quotes inside
  return command + " 2>&1";
}

}  // namespace

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
  const SessionConfig& config = sessions.config();
  SBX_ASSIGN_OR_RETURN(SessionInfo info, sessions.Get(session_id));
  if (config.wheelhouse.empty() && !info.egress.enabled) {
    return Fail(ErrorCode::kInstallFailed,
                "session {} was created with egress: false and this server has no wheelhouse, so "
                "it cannot install packages; create a session without egress: false",
                session_id);
  }
  // The wheelhouse first, offline; the index (through the session's egress) when that fails.
  std::vector<bool> attempts;
  if (!config.wheelhouse.empty()) attempts.push_back(true);
  if (info.egress.enabled) attempts.push_back(false);
  RunResult run;
  std::string earlier;
  for (bool offline : attempts) {
    RunRequest install;
    install.kind = RunRequest::Kind::kShell;
    install.timeout_s = request.timeout_s;
    install.code = PipCommand(request.packages, offline, info.egress.index_url, config.wheelhouse);
    SBX_ASSIGN_OR_RETURN(run, sessions.Run(session_id, install, on_output, cancel));
    if (run.timed_out) {
      return Fail(ErrorCode::kTimeout, "pip did not finish in time: {}",
                  Tail(run.stdout_text, 2000));
    }
    if (run.oom)
      return Fail(ErrorCode::kOom, "pip ran out of memory: {}", Tail(run.stdout_text, 2000));
    if (run.cancelled) return Fail(ErrorCode::kCancelled, "the install was cancelled");
    if (run.exit_code == 0) break;
    if (offline && attempts.size() > 1) {
      earlier = "(not all in the wheelhouse; from the index:)\n";
    }
  }
  if (run.exit_code != 0) {
    return Fail(ErrorCode::kInstallFailed, "pip failed (exit code {}):\n{}{}", run.exit_code,
                earlier, Tail(run.stdout_text, 4000));
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
