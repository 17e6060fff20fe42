// The runsc command line: where the binary is, which platform it runs the Sentry on, and running
// its short subcommands (`--version`, `delete`, `list`) to completion. The long-lived
// `runsc run` of a sandbox is the backend's own (gvisor_backend.cc).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::gvisor {

// SANDBOX_RUNSC and SANDBOX_GVISOR_PLATFORM, and where runsc keeps its container state.
struct RunscOptions {
  std::string binary = "runsc";  // a path, or a name looked up in PATH
  std::string platform = "ptrace";
  std::string root;  // runsc --root: the state of this server's containers
  // runsc --rootless: a server that is not root runs each sandbox in a user namespace runsc
  // makes that maps only the server's uid (no cgroups then).
  bool rootless = false;
};

// The platforms SANDBOX_GVISOR_PLATFORM accepts.
inline constexpr const char* kPlatforms[] = {"ptrace", "systrap", "kvm"};

// The absolute path of `binary` (a path, or a name looked up in PATH). kNotFound names what was
// looked for and how to install it.
Result<std::string> FindRunsc(const std::string& binary);

// What `runsc --version` says about itself.
struct RunscVersion {
  std::string line;  // "runsc version 0.0~20221219.0"
  int release = 0;   // the release date, 20221219; 0 when it cannot be read
};
Result<RunscVersion> ReadRunscVersion(const std::string& runsc_path);
// The release date in a `runsc --version` line ("0.0~20221219.0", "release-20230227.0"), or 0.
int ParseReleaseDate(const std::string& version_line);

// Whether this runsc on this host can use `platform`: systrap needs release 20230227 or later,
// kvm a /dev/kvm this process can open. Empty when it can, else why not.
std::string PlatformProblem(const std::string& platform, int release);

// The global flags every runsc invocation of a sandbox carries, in front of the subcommand.
std::vector<std::string> GlobalFlags(const RunscOptions& options, const std::string& runsc_path);

// Runs a runsc subcommand to its end (stdin /dev/null) and returns its stdout; a nonzero exit
// or a timeout fails, quoting the end of its stderr.
Result<std::string> RunRunsc(const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace sandbox::gvisor
