// sandbox_install_packages' work, in the session layer: pip installs into a session from the
// wheelhouse mounted read-only at /mnt/wheelhouse, offline (--no-index), into the session user's
// site (HOME=/tmp, so /tmp/.local), which new interpreters find by themselves; the running one is
// told with site.addsitedir. The MCP layer only maps what this returns.
#pragma once

#include <string>
#include <vector>

#include "runtime/base/pip_requirement.h"  // IsPlainRequirement, for its callers too
#include "runtime/base/result.h"
#include "runtime/run.h"
#include "runtime/session/session_manager.h"

namespace sandbox {

// Whether this server has anything to install from (kInstallFailed, saying what to do, when not):
// for callers that refuse before they make a session for an install.
Status CheckCanInstall(const SessionConfig& config);

struct InstallRequest {
  std::vector<std::string> packages;
  double timeout_s = 0;  // 0: the server's exec timeout
};

// Fails with kInvalidArgument for a requirement that is not plain; kInstallFailed when there is
// nothing to install from, when pip fails (its output's tail in the message) or when the session
// cannot load what was installed; kTimeout, kOom or kCancelled when the install run ended so; and
// with the run's own errors (session_busy, session_not_found, ...). Returns pip's output.
Result<std::string> InstallPackages(SessionManager& sessions, const std::string& session_id,
                                    const InstallRequest& request,
                                    const OutputCallback& on_output = {},
                                    CancelToken* cancel = nullptr);

}  // namespace sandbox
