// sandbox-init: the first process of every sandbox (pid 1 of its pid namespace, on both
// backends). Statically linked, so it runs in any image. Speaks the agent protocol on
// fd 0 (requests) and fd 1 (responses and events); fd 2 is a log the host may read or discard.
//
// Environment (all optional):
//   SANDBOX_AGENT_DATA_DIR  data directory (default /mnt/data)
//   SANDBOX_AGENT_TMP_DIR   tmp directory (default /tmp)
//   SANDBOX_AGENT_PYTHON    interpreter, a path or a name looked up in PATH (default python3)
//   SANDBOX_AGENT_WORKER    the worker script (default: worker.pyc next to this binary if
//                           there is one, else worker.py)
//   SANDBOX_AGENT_GRACE_MS  interrupt grace period before the kill (default 1000)
//   SANDBOX_AGENT_PRELOAD   modules a zygote imports once for every worker, comma-separated
//                           (default none: workers start cold)
//   SANDBOX_AGENT_PRELOAD_ON_REQUEST  "1": the zygote waits for the host's `preload` message
//                           (a session started cold); otherwise it starts after the hello
//   SANDBOX_AGENT_EGRESS_*  the egress channel and proxy port (egress_relay.h)
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "runtime/agent/agent_env.h"
#include "runtime/agent/init/agent.h"
#include "runtime/agent/init/child_process.h"
#include "runtime/agent/init/egress_relay.h"
#include "runtime/agent/wire.h"
#include "runtime/base/files.h"
#include "runtime/sandbox_layout.h"

extern char** environ;

namespace sandbox::agent {
namespace {

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = ::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// Tells the host why init cannot serve, as the protocol's error frame, then exits.
[[noreturn]] void Die(const Error& error) {
  std::string frame = EncodeFrame(ErrorAnswer(0, error));
  (void)WriteAll(1, frame);
  std::string line = "sandbox-init: " + error.message + "\n";
  (void)WriteAll(2, line);
  ::_exit(1);
}

Result<std::string> RealDir(const std::string& path) {
  (void)MakeDirs(path);  // mounted by the backend in a sandbox; made here for direct runs
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return FailSys("realpath", path);
  return std::string(resolved);
}

std::string DefaultWorkerScript(const char* argv0) {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv0);
  size_t slash = exe.rfind('/');
  std::string dir = slash == std::string::npos ? std::string(".") : exe.substr(0, slash);
  // An agent dir may carry the worker's byte code, compiled by this image's own Python before
  // any user code ran (tools/cli/run_agent_cache.h): Python does not cache a script it runs as
  // __main__, and compiling worker.py is a third of a cold worker's start.
  std::string compiled = dir + "/worker.pyc";
  if (::access(compiled.c_str(), R_OK) == 0) return compiled;
  return dir + "/worker.py";
}

// The environment of the worker and of shell commands: init's own (the image's plus the
// backend's), with the defaults a headless Python session needs where nothing else was chosen.
std::vector<std::string> ChildEnvironment(const std::string& data_dir, const std::string& tmp_dir) {
  std::vector<std::string> env;
  auto has = [&env](std::string_view name) {
    for (const auto& entry : env) {
      if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
        return true;
      }
    }
    return false;
  };
  auto names = [](std::string_view entry, std::string_view name) {
    return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
  };
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view value(*entry);
    if (names(value, agent_env::kDataDir)) continue;  // replaced by the realpath
    // init's business, not the session's: a pooled session's environment is a cold one's.
    if (names(value, agent_env::kPreload) || names(value, agent_env::kPreloadOnRequest)) continue;
    if (IsEgressRelayVariable(std::string(value))) continue;  // init's alone
    env.emplace_back(value);
  }
  env.push_back(std::string(agent_env::kDataDir) + "=" + data_dir);
  if (!has("PATH")) env.push_back(std::string("PATH=") + kDefaultPath);
  if (!has("HOME")) env.push_back("HOME=" + tmp_dir);
  if (!has("MPLBACKEND")) env.push_back("MPLBACKEND=Agg");
  if (!has("MPLCONFIGDIR")) env.push_back("MPLCONFIGDIR=" + tmp_dir + "/.matplotlib");
  return env;
}

int Main(int argc, char** argv) {
  (void)argc;
  // Writes to a host that went away must fail with EPIPE, not kill init.
  ::signal(SIGPIPE, SIG_IGN);
  // Not dumpable: code in the sandbox runs as the same uid and must not reach init's protocol
  // fds through /proc/1/fd or ptrace (proc(5), PR_SET_DUMPABLE in prctl(2)).
  ::prctl(PR_SET_DUMPABLE, 0);
  // When init is not pid 1 (tests on the host), orphans of the sandbox
  // are reparented to it instead of to the host's init, so it can reap them.
  if (::getpid() != 1) ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  AgentConfig config;
  auto data_dir = RealDir(EnvOr(agent_env::kDataDir, layout::kDataDir));
  if (!data_dir) Die(std::move(data_dir.error()).Context("data directory"));
  auto tmp_dir = RealDir(EnvOr(agent_env::kTmpDir, layout::kTmpDir));
  if (!tmp_dir) Die(std::move(tmp_dir.error()).Context("tmp directory"));
  config.data_dir = *data_dir;
  config.tmp_dir = *tmp_dir;
  config.child_env = ChildEnvironment(config.data_dir, config.tmp_dir);
  // Before anything else forks, so no child holds the listener or the channel.
  auto egress_env = StartEgressRelay();
  if (!egress_env) {
    Error error = std::move(egress_env.error()).Context("egress relay");
    error.code = ErrorCode::kSandboxUnavailable;
    Die(error);
  }
  for (std::string& entry : *egress_env) {
    // Ours wins over an image's own proxy setting of the same name (getenv takes the first).
    std::string prefix = entry.substr(0, entry.find('=') + 1);
    std::erase_if(config.child_env,
                  [&prefix](const std::string& have) { return have.starts_with(prefix); });
    config.child_env.push_back(std::move(entry));
  }

  std::string path_list = EnvOr("PATH", kDefaultPath);
  auto python = FindExecutable(EnvOr(agent_env::kPython, "python3"), path_list);
  if (!python) {
    Error error = std::move(python.error()).Context("the image has no usable Python");
    error.code = ErrorCode::kSandboxUnavailable;
    Die(error);
  }
  config.python = *python;
  config.worker_script = EnvOr(agent_env::kWorker, DefaultWorkerScript(argv[0]));
  if (::access(config.worker_script.c_str(), R_OK) != 0) {
    Error error = SysError("access", config.worker_script);
    error.code = ErrorCode::kSandboxUnavailable;
    Die(error);
  }
  std::string grace = EnvOr(agent_env::kGraceMs, "");
  if (!grace.empty()) {
    char* end = nullptr;
    long ms = std::strtol(grace.c_str(), &end, 10);
    if (end == grace.c_str() || *end != '\0' || ms < 0 || ms > 600000) {
      Die(MakeError(ErrorCode::kInvalidArgument, "{}={} is not 0..600000", agent_env::kGraceMs,
                    grace));
    }
    config.interrupt_grace = std::chrono::milliseconds(ms);
  }

  config.preload = EnvOr(agent_env::kPreload, "");
  config.preload_on_request = EnvOr(agent_env::kPreloadOnRequest, "") == "1";

  Agent agent(std::move(config), 0, 1);
  return agent.Serve();
}

}  // namespace
}  // namespace sandbox::agent

// Init answers what goes wrong with a Result; an exception is a bug (a JSON value of the wrong
// type, say). Uncaught, it would end pid 1 through std::terminate's abort, and the host would
// see the sandbox die without a word: said on the log instead, then init exits as Die does.
int main(int argc, char** argv) {
  try {
    return sandbox::agent::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-init: unexpected exception: %s\n", e.what());
  } catch (...) {
    std::fputs("sandbox-init: unexpected exception\n", stderr);
  }
  ::_exit(1);
}
