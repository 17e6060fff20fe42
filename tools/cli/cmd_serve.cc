// `mcp-sandbox serve [--stdio | --http HOST:PORT] [flags]`: the MCP server. Wires the
// configuration (tools/cli/config.h) into a SessionManager over the chosen backend and the image
// store, and serves it over stdio or Streamable HTTP until the client leaves or a signal comes.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mcp/apps/view_tools.h"
#include "mcp/drain.h"
#include "mcp/http_transport.h"
#include "mcp/metrics_listener.h"
#include "mcp/server.h"
#include "mcp/shutdown_signals.h"
#include "mcp/stdio_transport.h"
#include "mcp/tools/sandbox_tools.h"
#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "runtime/base/heap_trimmer.h"
#include "runtime/base/logging.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/backend_factory.h"
#include "runtime/session/session_manager.h"
#include "runtime/session/session_metrics.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/config.h"
#include "tools/cli/config_reference.h"
#include "tools/cli/configured_options.h"
#include "tools/cli/run_agent_cache.h"
#include "tools/cli/wiring.h"

namespace sandbox::cli {
namespace {

void PrintServeUsage(std::ostream& out) {
  out << "usage: mcp-sandbox serve [--stdio | --http [HOST:PORT]] [flags]\n\n"
         "Runs the MCP server: over stdio (the default; one JSON-RPC message per line), or over\n"
         "Streamable HTTP at http://HOST:PORT/mcp (default 127.0.0.1:8080).\n\n"
         "flags (each also an environment variable; flags win; --help-markdown and --help-man\n"
         "print this table for docs/configuration.md and the man page):\n";
  for (const auto& variable : ConfigVariables()) {
    out << fmt::format("  {:<22} {}\n", variable.flag, variable.env);
    out << fmt::format("  {:<22} {}{}\n", "", variable.meaning,
                       variable.default_value[0] != '\0'
                           ? fmt::format(" (default {})", variable.default_value)
                           : "");
  }
  out << "\nexamples:\n"
         "  mcp-sandbox serve                                  # stdio, for Claude Code / Desktop\n"
         "  SANDBOX_AUTH_TOKEN=$(openssl rand -hex 24) mcp-sandbox serve --http 127.0.0.1:8080\n"
         "  claude mcp add sandbox -- mcp-sandbox serve --memory-limit 1g\n";
}

// Shown on a terminal, where nobody speaks JSON-RPC: how to hook a client up instead.
void PrintConnectHint() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string path = n > 0 ? std::string(self, static_cast<size_t>(n)) : "mcp-sandbox";
  std::cerr << fmt::format(
      "mcp-sandbox serve: speaking MCP over stdio and waiting for a client (Ctrl-C to quit).\n"
      "This is meant to be started by an MCP client. For example:\n"
      "  Claude Code:     claude mcp add sandbox -- {0} serve\n"
      "  Claude Desktop (claude_desktop_config.json) or Cursor (.cursor/mcp.json):\n"
      "    {{\"mcpServers\": {{\"sandbox\": {{\"command\": \"{0}\", \"args\": [\"serve\"]}}}}}}\n"
      "  Over HTTP:       {0} serve --http 127.0.0.1:8080  ->  http://127.0.0.1:8080/mcp\n",
      path);
}

// A backend for hosts where none works: the server still starts and answers, and every
// session start fails with the reason (better for an MCP client than a server that dies).
class UnavailableBackend : public Backend {
 public:
  explicit UnavailableBackend(std::string reason) : reason_(std::move(reason)) {}
  std::string name() const override { return "none"; }
  Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec&) override {
    return Fail(ErrorCode::kSandboxUnavailable, "{}", reason_);
  }
  EnforcedLimits PlanLimits(const Limits&) const override { return {}; }
  Result<int> SweepOrphans() override { return 0; }

 private:
  std::string reason_;
};

// `--http` may come without an address (then SANDBOX_HTTP_HOST/PORT apply).
Argv NormalizeHttpFlag(const Argv& args) {
  Argv out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--http" && (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)) {
      out.push_back("--http=");
    } else {
      out.push_back(args[i]);
    }
  }
  return out;
}

// After the first shutdown signal, with SANDBOX_DRAIN_TIMEOUT_S set: no new sessions, the
// open ones go on until they go idle (SANDBOX_DRAIN_IDLE_S); returns when none is left, at the
// time-out, on a second signal, or when the HTTP server stops. The caller then stops as usual
// (closing what is left), so a drain leaves nothing behind either.
void Drain(const std::string& why, const ServeConfig& config, SessionManager& sessions,
           mcp::ShutdownSignals& signals) {
  auto seconds = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  mcp::DrainPlan plan(seconds(config.drain_timeout_s));
  if (plan.OnSignal(std::chrono::steady_clock::now()) != mcp::DrainPlan::Step::kDrain) return;
  sessions.StartDrain(seconds(config.drain_idle_s));
  size_t left = sessions.SessionCount();
  spdlog::info(
      "drain: {}; /readyz says draining, new sessions are refused, {} open session(s) go on "
      "until idle for {} s; stopping when none is left or in {} s (a second signal stops now)",
      why, left, config.drain_idle_s, config.drain_timeout_s);
  size_t logged = left;
  auto logged_at = std::chrono::steady_clock::now();
  for (;;) {
    if (auto again = signals.WaitFor(std::chrono::milliseconds(250))) {
      spdlog::info("drain: {}; stopping now", again->empty() ? "the HTTP server stopped" : *again);
      return;
    }
    auto now = std::chrono::steady_clock::now();
    left = sessions.SessionCount();
    if (auto reason = plan.StopReason(left, now)) {
      spdlog::info("drain: {}", *reason);
      return;
    }
    if (left != logged || now - logged_at >= std::chrono::seconds(10)) {
      auto remaining = std::chrono::duration_cast<std::chrono::seconds>(plan.deadline() - now);
      spdlog::info("drain: {} session(s) left, {} s to the time-out", left, remaining.count());
      logged = left;
      logged_at = now;
    }
  }
}

}  // namespace

int ServeCommand(const Argv& raw_args) { return ServeCommand(raw_args, {}); }

int ServeCommand(const Argv& raw_args, std::vector<mcp::Tool> extra_tools,
                 const ResourceWrapper& wrap_resources) {
  std::set<std::string> value_flags = {"--http"};
  for (const auto& variable : ConfigVariables()) value_flags.insert(variable.flag);
  Args args("serve", value_flags, {"--stdio", "--help-markdown", "--help-man"});
  if (!args.Parse(NormalizeHttpFlag(raw_args))) return kExitUsage;
  if (args.Has("--help")) {
    PrintServeUsage(std::cout);
    return kExitOk;
  }
  // The settings reference for docs/configuration.md and the man page (generated, never retyped).
  if (args.Has("--help-markdown")) {
    std::cout << ConfigTableMarkdown();
    return kExitOk;
  }
  if (args.Has("--help-man")) {
    WriteSettingsRoff(std::cout);
    return kExitOk;
  }
  if (!args.positional().empty())
    return args.UsageError("unexpected argument " + args.positional()[0]);
  bool http = args.Has("--http");
  if (http && args.Has("--stdio")) return args.UsageError("choose --stdio or --http, not both");

  std::map<std::string, std::string> flags;
  for (const auto& variable : ConfigVariables()) {
    if (auto value = args.Get(variable.flag)) flags[variable.flag] = *value;
  }
  auto loaded = LoadServeConfig(ProcessEnv, flags);
  if (!loaded) return args.UsageError(loaded.error().message);
  ServeConfig config = std::move(*loaded);
  if (http) {
    if (auto applied = ApplyHttpAddress(config, *args.Get("--http")); !applied) {
      return args.UsageError(
          fmt::format("--http '{}': {}", *args.Get("--http"), applied.error().message));
    }
  }
  if (auto logging =
          InitLogging({config.log_level, config.log_file, config.log_format, config.replica_id});
      !logging) {
    return args.UsageError(
        fmt::format("SANDBOX_LOG_FILE / SANDBOX_LOG_LEVEL: {}", logging.error().message));
  }
  if (!config.wheelhouse.empty() && access(config.wheelhouse.c_str(), R_OK | X_OK) != 0) {
    return args.UsageError(
        fmt::format("SANDBOX_WHEELHOUSE='{}': not a readable directory", config.wheelhouse));
  }
  if (!http && isatty(STDIN_FILENO)) PrintConnectHint();

  // --- The runtime.
  auto configured = ConfiguredOptionsFor(config);
  if (!configured) return args.UsageError(configured.error().message);
  const SessionConfig& session_config = configured->session;
  if (auto made = MakeDirs(session_config.state_dir, 0700); !made) {
    spdlog::warn("state dir {}: {}", session_config.state_dir, made.error().message);
  }
  std::shared_ptr<Backend> backend;
  bool backend_selected = false;
  if (auto selected = MakeBackend(configured->backend); selected) {  // logs its choice
    backend = selected->backend;
    backend_selected = true;
  } else {
    spdlog::error("{}", selected.error().message);
    backend = std::make_shared<UnavailableBackend>(selected.error().message);
  }
  ImageResolver resolver =
      MakeImageResolver(std::make_shared<rootfs::ImageStore>(session_config.state_dir));
  // The worker's byte code kept per image, as `run` keeps it (run_agent_cache.h): compiled now
  // for the default image when missing, so the pool's sandboxes start without the compile. Its
  // sandbox is not a session of this server: the metrics count from after it.
  metrics::SetRecording(false);
  if (backend_selected) UseKeptWorkerByteCode(configured->session, backend, resolver);
  metrics::SetRecording(config.usage);
  SessionManager sessions(session_config, backend, resolver);
  // Freed memory goes back to the kernel once the server has grown: every sandbox start copies
  // the server's page tables (runtime/base/heap_trimmer.h).
  HeapTrimmer heap_trimmer;
  // --- Metrics (runtime/metrics): the gauges read this manager; a listener of their own if set.
  metrics::SetServerInfo(config.replica_id, SANDBOX_VERSION, backend->name());
  SessionMetricsFeed metrics_feed = FeedSessionMetrics(sessions);
  std::unique_ptr<mcp::MetricsListener> metrics_listener;
  if (!config.metrics_addr.empty()) {
    auto started = mcp::MetricsListener::Start(*mcp::ParseListenAddress(config.metrics_addr));
    if (!started) {
      std::cerr << "mcp-sandbox serve: " << started.error().message << "\n";
      return kExitFailure;
    }
    metrics_listener = std::move(*started);
    auto address = *mcp::ParseListenAddress(config.metrics_addr);
    spdlog::info(
        "metrics on http://{}:{}/metrics",
        address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host,
        metrics_listener->port());
  }

  // --- The MCP server.
  const mcp::ToolSettings& settings = configured->tools;
  mcp::ServerOptions options = configured->server;
  options.version = SANDBOX_VERSION;
  options.instructions = mcp::SandboxInstructions(settings, sessions.config().egress);
  options.resources = mcp::SandboxResources(sessions, settings);
  if (wrap_resources) options.resources = wrap_resources(options.resources);
  auto tools = mcp::SandboxTools(sessions, settings);
  options.ui_tools = mcp::apps::ViewTools(sessions, settings);
  for (auto& extra : extra_tools) tools.push_back(std::move(extra));
  mcp::Server server(options, std::move(tools));

  // Every HTTP connection is a descriptor, and every session holds a few (its agent stream,
  // pidfd, kept cgroup files: runtime/cgroup/usage_files.h), over stdio too: take the whole
  // hard limit so hundreds of sessions and clients fit. Sandboxes set their own limit.
  if (struct rlimit files{};
      ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0) {
      spdlog::warn("cannot raise RLIMIT_NOFILE: {}", std::strerror(errno));
    }
  }
  if (!http) {
    auto served = mcp::ServeStdio(server, configured->stdio, [&sessions] { sessions.CloseAll(); });
    server.Shutdown();
    if (!served) {
      spdlog::error("stdio: {}", served.error().message);
      return kExitFailure;
    }
    spdlog::info("stopped");
    return kExitOk;
  }

  mcp::HttpOptions http_options = configured->http;
  http_options.read_file = mcp::SandboxFileReader(sessions);
  http_options.readiness = [&sessions, &config] {
    mcp::ReadinessFacts facts;
    facts.draining = sessions.draining();
    facts.sessions = sessions.SessionCount();
    facts.max_sessions = static_cast<size_t>(config.max_sessions);
    facts.replica = config.replica_id;
    // Starting until the warm pool has had its first sandbox (or its first start failed):
    // a proxy should place sessions where they start warm.
    if (auto pool = sessions.PoolStatus()) {
      facts.starting = pool->ready == 0 && pool->claimed == 0 && pool->failed == 0;
    }
    return facts;
  };
  mcp::HttpTransport transport(server, http_options);
  if (auto bound = transport.Bind(); !bound) {
    spdlog::error("{}", bound.error().message);
    std::cerr << "mcp-sandbox serve: " << bound.error().message << "\n";
    return kExitFailure;
  }
  mcp::ShutdownSignals signals;
  if (auto installed = signals.Install(); !installed) {
    spdlog::error("{}", installed.error().message);
    return kExitFailure;
  }
  spdlog::info("listening on http://{}/mcp{}",
               mcp::ListeningAuthority(config.http_host, transport.port()),
               config.auth_tokens.empty() && config.oauth_issuer.empty()
                   ? " (no SANDBOX_AUTH_TOKEN: anyone who can connect may use it)"
                   : "");
  Status served;
  std::thread serving([&] {
    served = transport.Serve();
    signals.Wake();
  });
  std::string why = signals.Wait();
  if (!why.empty()) Drain(why, config, sessions, signals);
  spdlog::info("{}; shutting down", why.empty() ? "the HTTP server stopped" : why);
  transport.Stop();
  serving.join();
  sessions.CloseAll();
  server.Shutdown();
  if (!served) {
    spdlog::error("{}", served.error().message);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace sandbox::cli
