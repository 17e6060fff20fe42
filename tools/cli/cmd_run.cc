// mcp-sandbox run: one snippet in a fresh sandbox, for CI runners executing untrusted code.
// Output streams live; the exit code is the snippet's (124 timeout, 137 killed, 130 when the
// runner itself was interrupted). --json prints one result object instead.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "runtime/base/logging.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_report.h"
#include "runtime/limits_json.h"
#include "runtime/session/backend_factory.h"
#include "runtime/session/session_manager.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/config.h"
#include "tools/cli/configured_options.h"
#include "tools/cli/wiring.h"

namespace sandbox::cli {
namespace {

constexpr int kExitTimeout = 124;
constexpr int kExitKilled = 137;
constexpr int kExitInterrupted = 130;

constexpr const char* kHelp = R"(usage: mcp-sandbox run [flags] FILE|-

Runs a Python snippet (or a shell command with --shell) once in a fresh sandbox, streams its
output, and exits with the snippet's exit code: 124 on timeout, 137 when killed (memory limit or
signal), 1 when the sandbox could not start.

flags:
  --image NAME       image from the store (default: $SANDBOX_IMAGE or "python")
  --timeout S        wall-clock limit in seconds (default: $SANDBOX_EXEC_TIMEOUT_S or 60)
  --memory SIZE      memory limit, e.g. 256m (default: $SANDBOX_MEMORY_LIMIT or 512m);
                     /mnt/data and /tmp are sized from it as `serve` sizes them
  --cpus N           CPU limit (default: $SANDBOX_CPU_LIMIT or 1.0)
  --pids N           process limit (default: $SANDBOX_PIDS_LIMIT or 256)
  --egress-allow L   hosts the snippet may reach through the egress proxy (default:
                     $SANDBOX_EGRESS_ALLOW or none; grammar in docs/egress.md)
  --shell            treat the input as a shell command line, not Python
  --json             print one JSON object (stdout, stderr, exit_code, duration_s, limits,
                     artifacts) instead of streaming
  --backend KIND     auto | namespace | docker (default: $SANDBOX_BACKEND or auto)
  --state-dir DIR    the store and session records (default: $SANDBOX_STATE_DIR, ...)

example:
  echo 'import sys; print(sys.version)' | mcp-sandbox run --timeout 10 -
)";

Result<std::string> ReadSnippet(const std::string& source) {
  if (source == "-") {
    std::string code((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return code;
  }
  return ReadFile(source);
}

// Invalid UTF-8 from the snippet must not break the JSON: replace it.
std::string Utf8(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

int RunCommand(const Argv& argv) {
  Args args("run",
            {"--image", "--timeout", "--memory", "--cpus", "--pids", "--backend", "--state-dir",
             "--egress-allow"},
            {"--json", "--shell"});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << kHelp;
    return kExitOk;
  }
  if (args.positional().size() != 1) return args.UsageError("expects one FILE or - (see --help)");

  // Everything goes through serve's own parser and mapping (tools/cli/configured_options.h):
  // the same sizes, bounds and messages, SANDBOX_* read the same way, and /mnt/data and /tmp
  // sized from the memory limit as serve sizes them, so a small --memory never gets a tmpfs it
  // cannot hold.
  static constexpr std::pair<const char*, const char*> kServeFlags[] = {
      {"--timeout", "--exec-timeout-s"},
      {"--memory", "--memory-limit"},
      {"--cpus", "--cpu-limit"},
      {"--pids", "--pids-limit"},
      {"--egress-allow", "--egress-allow"},
      {"--image", "--image"},
      {"--backend", "--backend"},
      {"--state-dir", "--state-dir"}};
  std::map<std::string, std::string> serve_flags;
  for (auto [run_flag, serve_flag] : kServeFlags) {
    if (auto value = args.Get(run_flag)) serve_flags[serve_flag] = *value;
  }
  auto serve_config = LoadServeConfig(ProcessEnv, serve_flags);
  if (!serve_config) {
    std::string message = serve_config.error().message;
    for (auto [run_flag, serve_flag] : kServeFlags) {
      if (message.rfind(serve_flag + std::string(" ("), 0) == 0) {
        message = run_flag + message.substr(std::string(serve_flag).size());
      }
    }
    return args.UsageError(message);
  }
  auto configured = ConfiguredOptionsFor(*serve_config);
  if (!configured) return args.UsageError(configured.error().message);
  NarrowToOneRun(*configured);
  const SessionConfig& config = configured->session;

  auto code = ReadSnippet(args.positional()[0]);
  if (!code) {
    std::cerr << "mcp-sandbox run: " << code.error().message << "\n";
    return kExitFailure;
  }

  LogOptions log_options;
  log_options.level = "warn";
  (void)InitLogging(log_options);

  // Block SIGINT/SIGTERM in every thread; one thread waits for them and cancels the run, so
  // an interrupted runner still tears the sandbox down.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR2);  // our own wake-up of the signal thread at the end
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto backend = MakeBackend(configured->backend);
  if (!backend) {
    std::cerr << "mcp-sandbox run: " << backend.error().message << "\n";
    return kExitFailure;
  }
  auto store = std::make_shared<rootfs::ImageStore>(config.state_dir);
  SessionManager manager(config, backend->backend, MakeImageResolver(store));

  auto session = manager.Create({});
  if (!session) {
    std::cerr << "mcp-sandbox run: " << session.error().message << "\n";
    return kExitFailure;
  }

  CancelToken cancel;
  std::atomic<bool> interrupted{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGUSR2) return;
    interrupted = true;
    cancel.Cancel();
  });

  bool json = args.Has("--json");
  RunRequest request;
  request.kind = args.Has("--shell") ? RunRequest::Kind::kShell : RunRequest::Kind::kPython;
  request.code = std::move(*code);
  request.timeout_s = config.exec_timeout_s;
  OutputCallback stream_output;
  if (!json) {
    stream_output = [](int stream, std::string_view chunk) {
      FILE* out = stream == 2 ? stderr : stdout;
      std::fwrite(chunk.data(), 1, chunk.size(), out);
      std::fflush(out);
    };
  }
  auto result = manager.Run(session->id, request, stream_output, &cancel);

  // Wake and join the signal thread before tearing down.
  pthread_kill(signal_thread.native_handle(), SIGUSR2);
  signal_thread.join();
  auto info = manager.Get(session->id);
  (void)manager.Close(session->id, /*force=*/true);

  if (!result) {
    std::cerr << "mcp-sandbox run: " << result.error().message << "\n";
    return interrupted ? kExitInterrupted : kExitFailure;
  }
  int exit_code = result->exit_code;
  if (result->timed_out)
    exit_code = kExitTimeout;
  else if (result->oom || result->worker_killed)
    exit_code = kExitKilled;
  else if (result->cancelled || interrupted)
    exit_code = kExitInterrupted;

  if (json) {
    nlohmann::json out;
    out["exit_code"] = exit_code;
    out["stdout"] = nlohmann::json::parse(Utf8(result->stdout_text));
    out["stderr"] = nlohmann::json::parse(Utf8(result->stderr_text));
    out["stdout_truncated"] = result->stdout_truncated;
    out["stderr_truncated"] = result->stderr_truncated;
    out["timed_out"] = result->timed_out;
    out["oom"] = result->oom;
    out["duration_s"] = result->duration_s;
    out["limits"] = info ? EnforcedLimitsJson(info->enforced) : nlohmann::json(nullptr);
    if (info) {
      out["egress"] = egress::EgressJson(info->egress, /*with_usage=*/true);
    }
    out["artifacts"] = nlohmann::json::array();
    for (const auto& file : result->artifacts) {
      out["artifacts"].push_back({{"path", nlohmann::json::parse(Utf8(file.path))},
                                  {"size", file.size},
                                  {"mime_type", file.mime_type}});
    }
    std::cout << out.dump() << std::endl;
  } else {
    if (result->timed_out)
      std::cerr << "mcp-sandbox run: timed out after " << config.exec_timeout_s << " s\n";
    if (result->oom) std::cerr << "mcp-sandbox run: killed: memory limit reached\n";
    if (result->stdout_truncated || result->stderr_truncated) {
      std::cerr << "mcp-sandbox run: output was truncated\n";
    }
  }
  return exit_code;
}

}  // namespace sandbox::cli
