// mcp-sandbox run: one snippet in a fresh sandbox, for CI runners executing untrusted code.
// Output streams live; the exit code is the snippet's (124 timeout, 137 killed, 130 when the
// runner itself was interrupted). --json prints one result object instead. --batch runs a
// JSONL file of snippets, each in a fresh sandbox, several at once (run_batch.h).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "runtime/base/logging.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_report.h"
#include "runtime/limits_json.h"
#include "runtime/probe/probe_cache.h"
#include "runtime/session/backend_factory.h"
#include "runtime/session/session_manager.h"
#include "seccomp/policy.h"
#include "seccomp/program_cache.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/config.h"
#include "tools/cli/configured_options.h"
#include "tools/cli/run_agent_cache.h"
#include "tools/cli/run_batch.h"
#include "tools/cli/run_result.h"
#include "tools/cli/wiring.h"

namespace sandbox::cli {
namespace {

constexpr const char* kRunHelp = R"(usage: mcp-sandbox run [flags] FILE|-
       mcp-sandbox run --batch FILE|- [--parallel N] [flags]

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
  --backend KIND     auto | namespace | docker | gvisor (default: $SANDBOX_BACKEND or auto)
  --state-dir DIR    the store and session records (default: $SANDBOX_STATE_DIR, ...)

batch mode (docs/ci.md "Batch runs"):
  --batch FILE|-     one snippet per line, a JSON object: {"id", "code", "shell", "stdin",
                     "timeout_s", "memory", "files": {"name": "content"}}; one result per
                     line on stdout, in the input's order: {"id", "line", "ran", "exit_code",
                     "stdout", "stderr", "timed_out", "oom", "duration_s", "wall_s",
                     "cpu_s", "memory_peak_bytes", "artifacts"}, or {"id", "line", "ran": false, "error"}. Each snippet in
                     a fresh sandbox; --timeout and --memory are the defaults and the maxima.
                     Exits 0 when every snippet ran (whatever their exit codes), 1 when one
                     could not run (a bad line, a sandbox that did not start), 130 when
                     interrupted. Progress and a summary line on stderr.
  --parallel N       snippets at once (default: the number of CPUs)
  --warm N           sandboxes started ahead for the next snippets, each used once
                     (default: --parallel; 0: each snippet starts its own)

examples:
  echo 'import sys; print(sys.version)' | mcp-sandbox run --timeout 10 -
  mcp-sandbox run --batch tests.jsonl --parallel 4 > results.jsonl
)";

Result<std::string> ReadSnippet(const std::string& source) {
  if (source == "-") {
    std::string code((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return code;
  }
  return ReadFile(source);
}

// Blocks SIGINT/SIGTERM in every thread; one thread waits for them and calls `on_signal`, so
// an interrupted runner still tears its sandboxes down. Stop() wakes it at the end.
class SignalThread {
 public:
  explicit SignalThread(std::function<void()> on_signal) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGUSR2);  // our own wake-up at the end
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    thread_ = std::thread([this, on_signal = std::move(on_signal)] {
      int sig = 0;
      sigwait(&signals_, &sig);
      if (sig != SIGUSR2) on_signal();
    });
  }
  // Before any teardown: the thread must not act on what is being torn down.
  void Stop() {
    if (!thread_.joinable()) return;
    pthread_kill(thread_.native_handle(), SIGUSR2);
    thread_.join();
  }
  ~SignalThread() { Stop(); }

 private:
  sigset_t signals_;
  std::thread thread_;
};

// --parallel and --warm: a count from `min` to 256; unset, the number of CPUs.
Result<int> ParseCount(const char* flag, const std::optional<std::string>& text, int min) {
  if (!text) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || value < min || value > 256) {
    return Fail(ErrorCode::kInvalidArgument, "{}: '{}' is not a number from {} to 256", flag, *text,
                min);
  }
  return static_cast<int>(value);
}

// The snippets of a JSONL file, `parallel` at once in fresh sandboxes.
int RunBatchCommand(ConfiguredOptions& configured, const ServeConfig& serve_config,
                    const std::string& source, int parallel, int warm) {
  std::ifstream file;
  if (source != "-") {
    file.open(source);
    if (!file) {
      std::cerr << "mcp-sandbox run: cannot read " << source << ": " << std::strerror(errno)
                << "\n";
      return kExitFailure;
    }
  }
  std::istream& in = source == "-" ? std::cin : file;
  // A result line carries each stream up to SANDBOX_MAX_OUTPUT_BYTES (a single `run` streams
  // up to 16 MiB to a CI log; a results file of thousands of lines wants the server's bound).
  configured.session.max_output_bytes = serve_config.max_output_bytes;
  // `parallel` sessions running and `warm` started ahead (the batch's own warm pool, not the
  // server's, which refills only in quiet moments); the backend's budget counts those being
  // torn down behind them too.
  configured.session.max_sessions = parallel + warm;
  configured.session.measure_calls = true;  // each result line reports cpu_s and its peak
  configured.session.pool_size = 0;
  configured.backend.max_sessions = 3 * parallel + warm;
  const SessionConfig& config = configured.session;

  std::atomic<BatchRun*> batch{nullptr};
  std::atomic<bool> interrupted{false};
  SignalThread signal_thread([&] {
    interrupted = true;
    if (BatchRun* run = batch.load()) run->Stop();
  });

  auto backend = MakeBackend(configured.backend);
  if (!backend) {
    std::cerr << "mcp-sandbox run: " << backend.error().message << "\n";
    return kExitFailure;
  }
  auto store = std::make_shared<rootfs::ImageStore>(config.state_dir);
  ImageResolver resolver = MakeImageResolver(store);
  // The worker's byte code, compiled once per image and agent (run_agent_cache.h).
  configured.session.agent_dir = CompiledAgentDir(config, backend->backend, resolver);
  SessionManager manager(config, backend->backend, resolver);
  BatchOptions options;
  options.parallel = parallel;
  options.warm = warm;
  options.progress_tty = ::isatty(STDERR_FILENO) == 1;
  BatchRun run(manager, options);
  batch = &run;
  if (interrupted) run.Stop();  // a signal before `batch` was set
  BatchSummary summary = run.Run(in, stdout);
  signal_thread.Stop();
  std::cerr << SummaryLine(summary) << std::endl;
  if (summary.interrupted) return kExitInterrupted;
  return summary.not_run == 0 ? kExitOk : kExitFailure;
}

}  // namespace

int RunCommand(const Argv& argv) {
  Args args("run",
            {"--image", "--timeout", "--memory", "--cpus", "--pids", "--backend", "--state-dir",
             "--egress-allow", "--batch", "--parallel", "--warm"},
            {"--json", "--shell"});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << kRunHelp;
    return kExitOk;
  }
  const bool batch = args.Has("--batch");
  if (batch) {
    if (!args.positional().empty()) return args.UsageError("--batch takes no FILE (see --help)");
    if (args.Has("--json") || args.Has("--shell")) {
      return args.UsageError("--json and --shell are per line in --batch (see --help)");
    }
  } else {
    if (args.positional().size() != 1) return args.UsageError("expects one FILE or - (see --help)");
    if (args.Has("--parallel") || args.Has("--warm")) {
      return args.UsageError("--parallel and --warm need --batch");
    }
  }
  auto parallel = ParseCount("--parallel", args.Get("--parallel"), 1);
  if (!parallel) return args.UsageError(parallel.error().message);
  auto warm = ParseCount("--warm", args.Get("--warm"), 0);
  if (!warm) return args.UsageError(warm.error().message);

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
  // What a call used (CPU seconds, memory peak) is measured for status, metrics and --batch's
  // result lines; a single run reports none of it: not measured.
  configured->session.measure_calls = false;
  const SessionConfig& config = configured->session;

  // A reader of the output that goes away (`| head`) must not end the runner before it tears
  // its sandboxes down: writes fail with EPIPE instead.
  ::signal(SIGPIPE, SIG_IGN);
  LogOptions log_options;
  log_options.level = "warn";
  // A run compiles the seccomp policy once per process, so it keeps the compiled program
  // between runs (seccomp/program_cache.h), as it keeps the probes' verdict.
  const std::string kept_program = seccomp::ProgramCachePath(config.state_dir);
  seccomp::KeepCompiledPolicyIn(kept_program);
  if (batch) {
    (void)InitLogging(log_options);
    return RunBatchCommand(*configured, *serve_config, *args.Get("--batch"), *parallel,
                           args.Has("--warm") ? *warm : *parallel);
  }

  auto code = ReadSnippet(args.positional()[0]);
  if (!code) {
    std::cerr << "mcp-sandbox run: " << code.error().message << "\n";
    return kExitFailure;
  }
  (void)InitLogging(log_options);

  CancelToken cancel;
  std::atomic<bool> interrupted{false};
  SignalThread signal_thread([&] {
    interrupted = true;
    cancel.Cancel();
  });

  // The probes' verdict is kept between runs (probe_cache.h). Should a sandbox not start on a
  // kept verdict (for another reason than its image), it is forgotten and the backend chosen
  // again on fresh probes, once. The kept seccomp program is forgotten after any such failure
  // (this process keeps the one it loaded; the next run compiles again).
  configured->backend.probe_cache = probe::ProbeCachePath(config.state_dir);
  bool image_failed = false;
  ImageResolver resolver = [&image_failed,
                            store_resolver = MakeImageResolver(std::make_shared<rootfs::ImageStore>(
                                config.state_dir))](const std::string& name) {
    auto image = store_resolver(name);
    if (!image) image_failed = true;
    return image;
  };
  // The worker's byte code is kept per image and agent too (run_agent_cache.h): a sandbox that
  // does not start on the kept copy makes it forgotten, and the retry starts on the plain one.
  std::unique_ptr<SessionManager> manager;
  Result<SessionInfo> session = Fail(ErrorCode::kSandboxUnavailable, "not started");
  for (bool retried = false;; retried = true) {
    auto backend = MakeBackend(configured->backend);
    if (!backend) {
      std::cerr << "mcp-sandbox run: " << backend.error().message << "\n";
      return kExitFailure;
    }
    SessionConfig run_config = config;
    if (!retried) run_config.agent_dir = CompiledAgentDir(config, backend->backend, resolver);
    const bool kept_agent = run_config.agent_dir != config.agent_dir;
    manager = std::make_unique<SessionManager>(run_config, backend->backend, resolver);
    session = manager->Create({});
    if (!session && !image_failed) {
      seccomp::ForgetKeptProgram(kept_program);
      ForgetCompiledAgentDir(config, run_config.agent_dir);
    }
    if (session || image_failed || retried || !(backend->from_probe_cache || kept_agent)) break;
    if (backend->from_probe_cache) probe::ForgetNamespaceVerdict(configured->backend.probe_cache);
    manager.reset();
  }
  if (!session) {
    std::cerr << "mcp-sandbox run: " << session.error().message << "\n";
    return kExitFailure;
  }

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
  auto result = manager->Run(session->id, request, stream_output, &cancel);

  signal_thread.Stop();
  // The limits and egress in force, for --json only.
  auto info = json ? manager->Get(session->id) : Fail(ErrorCode::kNotFound, "not asked for");
  (void)manager->Close(session->id, /*force=*/true);

  if (!result) {
    std::cerr << "mcp-sandbox run: " << result.error().message << "\n";
    return interrupted ? kExitInterrupted : kExitFailure;
  }
  int exit_code = RunExitCode(*result, interrupted);

  if (json) {
    nlohmann::json out = RunResultJson(*result, exit_code);
    out["limits"] = info ? EnforcedLimitsJson(info->enforced) : nlohmann::json(nullptr);
    if (info) {
      out["egress"] = egress::EgressJson(info->egress, /*with_usage=*/true);
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
