// mcp-sandbox doctor: what this host supports (user namespaces, seccomp, cgroups, the Docker
// socket), which backend and which limits `serve` would use, and why. The configuration is read
// by serve's own parser (tools/cli/config.h), so the two cannot disagree on a value. Exit 0 when a
// backend is usable, 1 when none is, 2 on usage errors and on a SANDBOX_* value serve refuses.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mcp/auth/jwks_cache.h"
#include "mcp/auth/resource_server.h"
#include "rootfs/store.h"
#include "runtime/base/result.h"
#include "runtime/base/units.h"
#include "runtime/docker/daemon_runtime.h"
#include "runtime/docker/engine_client.h"
#include "runtime/docker/unix_http.h"
#include "runtime/egress/egress_report.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/limits.h"
#include "runtime/limits_json.h"
#include "runtime/ns/kernel_counters.h"
#include "runtime/probe/host_probe.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/config.h"

namespace sandbox::cli {
namespace {

constexpr const char* kDoctorHelp = R"(usage: mcp-sandbox doctor [--json]

Probes this host for real and reports what the sandbox can use: user namespaces (a child
creates one, writes its uid/gid maps and mounts a tmpfs), seccomp (a child installs a filter),
cgroup v2 delegation or cgroup v1 controllers, and the Docker socket; then which backend and
which limits `serve` would use, and why. It reads the SANDBOX_* variables with serve's own
parser (see `mcp-sandbox serve --help`; SANDBOX_BACKEND, SANDBOX_STATE_DIR and the limits
matter here), plus SANDBOX_CGROUP and DOCKER_HOST. A value serve would refuse is reported
after the report, with serve's message, and its default is used for the report.
As root it creates the parent cgroup (mcp-sandbox), as serve would.

flags:
  --json   one JSON object on stdout instead of tables (bad values in "config_errors")

exit codes: 0 a backend is usable, 1 none is, 2 usage error or a SANDBOX_* value serve would
refuse (serve exits 2 for it too)

example:
  mcp-sandbox doctor
  SANDBOX_BACKEND=docker mcp-sandbox doctor --json
)";

nlohmann::json ErrnoJson(int err) {
  return err == 0 ? nlohmann::json(nullptr) : nlohmann::json(std::string(ErrnoName(err)));
}

nlohmann::json StepJson(const std::string& step) {
  return step.empty() ? nlohmann::json(nullptr) : nlohmann::json(step);
}

// The warm pool serve would keep (SANDBOX_POOL_SIZE, SANDBOX_POOL_PRELOAD).
std::string PoolDetail(const ServeConfig& config) {
  if (config.pool_size == 0) return "off (SANDBOX_POOL_SIZE=0): every session starts cold";
  return fmt::format("{} sandbox(es) of {} kept ready, preload {}", config.pool_size, config.image,
                     config.pool_preload.empty() ? "none" : config.pool_preload);
}

// SANDBOX_DOCKER_RUNTIME against the daemon's registered runtimes: whether Docker sandboxes would
// run under it (runsc: gVisor's kernel), or what to do when the daemon lacks it.
struct DockerRuntimeCheck {
  bool ok = false;
  std::string detail;
};

DockerRuntimeCheck CheckDockerRuntime(const ServeConfig& config) {
  auto socket = docker::DockerSocketPath(std::getenv("DOCKER_HOST"));
  if (!socket) return {false, socket.error().message};
  auto engine = docker::EngineClient::Connect(*socket);
  if (!engine) return {false, "no daemon to ask: " + engine.error().message};
  return {static_cast<bool>(docker::RequireRuntime((*engine)->info(), config.docker_runtime)),
          docker::DescribeRuntime((*engine)->info(), config.docker_runtime)};
}

// Hibernation (docs/sessions.md "Hibernate, resume, fork"): when, where and by what mechanism.
std::string HibernationDetail(const ServeConfig& config) {
  auto after = HibernateAfter(config);
  if (after.count() == 0) return "off (SANDBOX_HIBERNATE_AFTER_S=0): idle sessions are closed";
  return fmt::format(
      "after {} s idle and at an orderly stop; mechanism: dill inside the sandbox (the image's "
      "python3-dill; pickle without it), no CRIU; at most {} saved for {} s",
      std::chrono::duration_cast<std::chrono::seconds>(after).count(),
      FormatBytes(config.saved_max_bytes), config.saved_ttl_s);
}

nlohmann::json ReportJson(const probe::HostReport& r, const std::string& state_dir,
                          const ServeConfig& config,
                          const std::vector<std::string>& config_errors) {
  nlohmann::json sysctls = nlohmann::json::object();
  for (const auto& [name, value] : r.userns.sysctls) sysctls[name] = value;
  return {
      {"kernel", r.kernel},
      {"uid", r.uid},
      {"user_namespaces",
       {{"ok", r.userns.ok},
        {"failed_step", StepJson(r.userns.failed_step)},
        {"errno", ErrnoJson(r.userns.sys_errno)},
        {"detail", r.userns.detail},
        {"explanation", r.userns.explanation},
        {"sysctls", sysctls}}},
      {"seccomp",
       {{"ok", r.seccomp.ok},
        {"mode_now", r.seccomp.mode_now},
        {"filters_now", r.seccomp.filters_now},
        {"failed_step", StepJson(r.seccomp.failed_step)},
        {"errno", ErrnoJson(r.seccomp.sys_errno)},
        {"detail", r.seccomp.detail}}},
      {"cgroup",
       {{"mode", r.cgroup_mode}, {"reason", r.cgroup_reason}, {"parents", r.cgroup_parents}}},
      {"docker",
       {{"reachable", r.docker.reachable},
        {"api_ok", r.docker.api_ok},
        {"endpoint", r.docker.endpoint},
        {"api_version", r.docker.api_version.empty() ? nlohmann::json(nullptr)
                                                     : nlohmann::json(r.docker.api_version)},
        {"detail", r.docker.detail}}},
      {"gvisor", {{"ok", r.gvisor.ok}, {"detail", r.gvisor.detail}}},
      {"backend",
       {{"name", r.backend.backend},
        {"requested", r.backend.requested},
        {"usable", r.backend.backend != "none"},
        {"reason", r.backend.reason}}},
      {"state_dir", state_dir},
      {"pool",
       {{"size", config.pool_size}, {"image", config.image}, {"preload", config.pool_preload}}},
      {"hibernation",
       {{"enabled", HibernateAfter(config).count() > 0},
        {"after_s", std::chrono::duration<double>(HibernateAfter(config)).count()},
        {"mechanism", "dill"},
        {"saved_max_bytes", config.saved_max_bytes},
        {"saved_ttl_s", config.saved_ttl_s},
        {"detail", HibernationDetail(config)}}},
      {"limits_mode", r.limits.cgroup_mode},
      {"limits", EnforcedLimitsJson(r.limits)["limits"]},
      {"config_errors", config_errors},
  };
}

void PrintRow(std::ostream& out, const std::string& a, const std::string& b, const std::string& c,
              size_t wa, size_t wb) {
  out << "  " << a << std::string(wa > a.size() ? wa - a.size() : 1, ' ') << b
      << std::string(wb > b.size() ? wb - b.size() : 1, ' ') << c << "\n";
}

void PrintHuman(std::ostream& out, const probe::HostReport& r, const std::string& state_dir,
                const ServeConfig& config, const std::vector<std::string>& config_errors) {
  out << fmt::format("mcp-sandbox doctor: kernel {}, uid {}\n\n", r.kernel, r.uid);
  constexpr size_t kW1 = 18;
  constexpr size_t kW2 = 13;
  PrintRow(out, "CHECK", "RESULT", "DETAIL", kW1, kW2);
  PrintRow(out, "user namespaces", r.userns.ok ? "ok" : "FAILED", r.userns.detail, kW1, kW2);
  if (!r.userns.explanation.empty())
    PrintRow(out, "", "", "why: " + r.userns.explanation, kW1, kW2);
  if (!r.userns.sysctls.empty()) {
    std::string text;
    for (const auto& [name, value] : r.userns.sysctls) {
      text += (text.empty() ? "" : ", ") + name + "=" + value;
    }
    PrintRow(out, "", "", text, kW1, kW2);
  }
  PrintRow(out, "seccomp", r.seccomp.ok ? "ok" : "FAILED", r.seccomp.detail, kW1, kW2);
  PrintRow(out, "cgroups", r.cgroup_mode, r.cgroup_reason, kW1, kW2);
  PrintRow(out, "docker", r.docker.reachable ? (r.docker.api_ok ? "ok" : "too old") : "unreachable",
           r.docker.detail, kW1, kW2);
  PrintRow(out, "gvisor", r.gvisor.ok ? "ok" : "unavailable", r.gvisor.detail, kW1, kW2);
  PrintRow(
      out, "backend", r.backend.backend,
      r.backend.reason +
          (r.backend.requested == "auto" ? "" : " [SANDBOX_BACKEND=" + r.backend.requested + "]"),
      kW1, kW2);
  PrintRow(out, "state dir", "", state_dir, kW1, kW2);
  PrintRow(out, "warm pool", config.pool_size > 0 ? "on" : "off", PoolDetail(config), kW1, kW2);
  PrintRow(out, "hibernation", HibernateAfter(config).count() > 0 ? "on" : "off",
           HibernationDetail(config), kW1, kW2);

  out << fmt::format("\nlimits serve would use ({}):\n", r.limits.cgroup_mode == "none"
                                                             ? "no cgroups: rlimits only"
                                                             : r.limits.cgroup_mode);
  constexpr size_t kL1 = 18;
  constexpr size_t kL2 = 14;
  out << "  "
      << "LIMIT" << std::string(kL1 - 5, ' ') << "VALUE" << std::string(kL2 - 5, ' ')
      << "MECHANISM  NOTE\n";
  for (const auto& limit : r.limits.limits) {
    std::string mechanism = LimitMechanismName(limit.mechanism);
    PrintRow(out, limit.name, limit.value,
             mechanism + std::string(mechanism.size() < 11 ? 11 - mechanism.size() : 1, ' ') +
                 limit.note,
             kL1, kL2);
  }
  if (!config_errors.empty()) {
    out << "\nconfiguration serve would refuse (defaults used above):\n";
    for (const auto& error : config_errors) out << "  " << error << "\n";
  }
}

}  // namespace

int DoctorCommand(const Argv& argv) {
  Args args("doctor", {}, {"--json"});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << kDoctorHelp;
    return kExitOk;
  }
  if (!args.positional().empty())
    return args.UsageError("unexpected argument '" + args.positional()[0] + "'");
  // serve's parser, so that doctor reports what serve would do (or refuse), word for word.
  CheckedServeConfig checked = CheckServeConfig(ProcessEnv, {});
  const ServeConfig& config = checked.config;
  // The http:// issuer rule serve applies as it starts over HTTP: an error it would refuse to
  // start with joins the configuration errors; an issuer it would accept with a warning is
  // reported with that warning.
  mcp::auth::OAuthSettings issuer_settings;
  issuer_settings.issuer = config.oauth_issuer;
  issuer_settings.allow_http_issuer = config.oauth_allow_http_issuer;
  auto issuer_rule = mcp::auth::JudgeIssuerUrl(issuer_settings);
  if (!issuer_rule) checked.errors.push_back(issuer_rule.error().message);
  std::string state_dir =
      config.state_dir.empty() ? rootfs::ImageStore::DefaultStateDir() : config.state_dir;

  // runsc is looked for whatever the backend: doctor says whether gVisor could be used here.
  gvisor::RunscCheck runsc = gvisor::CheckRunsc(config.runsc, config.gvisor_platform);
  probe::HostReport report = probe::ProbeHost(SessionLimits(config), config.backend, state_dir,
                                              {.ok = runsc.ok, .detail = runsc.detail});
  if (report.backend.backend == "gvisor") {
    gvisor::DescribeGvisorLimits(SessionLimits(config), report.limits);
  }
  if (report.backend.backend == "namespace") {
    // The per-sandbox caps on the kernel's per-user counters serve would set.
    const bool own_host_uid = ::geteuid() == 0;
    ns::DescribeCaps(ns::SandboxCaps(ns::HostPerUserBudget(), own_host_uid,
                                     config.max_sessions + config.pool_size),
                     own_host_uid, report.limits);
  }
  // The egress policy sessions would get (issue #9): off, or the allowlist in force.
  auto egress = EgressConfigFor(config);
  egress::EgressInfo policy = egress::DescribePolicy(egress ? *egress : egress::EgressConfig{});
  // OAuth: whether the issuer's keys can be fetched from here, as serve would at start.
  nlohmann::json oauth = {{"issuer", config.oauth_issuer}};
  std::string oauth_line = "off";
  if (!issuer_rule) {
    oauth["error"] = issuer_rule.error().message;
    oauth_line = fmt::format("issuer {}: refused, see below", config.oauth_issuer);
  } else if (!config.oauth_issuer.empty()) {
    mcp::auth::JwksOptions jwks;
    jwks.issuer = config.oauth_issuer;
    mcp::auth::JwksCache keys(jwks);
    auto fetched = keys.Refresh();
    oauth["keys"] = keys.size();
    if (!fetched) oauth["error"] = fetched.error().message;
    oauth_line = fetched
                     ? fmt::format("issuer {}: {} signing keys", config.oauth_issuer, keys.size())
                     : fmt::format("issuer {}: {}", config.oauth_issuer, fetched.error().message);
  }
  if (issuer_rule && !issuer_rule->empty()) oauth["warning"] = *issuer_rule;
  // Asked only where it matters: a runtime was named, or Docker is the backend.
  std::optional<DockerRuntimeCheck> docker_runtime;
  if (report.docker.api_ok &&
      (!config.docker_runtime.empty() || report.backend.backend == "docker")) {
    docker_runtime = CheckDockerRuntime(config);
  }
  if (args.Has("--json")) {
    nlohmann::json out = ReportJson(report, state_dir, config, checked.errors);
    out["egress"] = egress::EgressJson(policy, /*with_usage=*/false);
    out["oauth"] = oauth;
    if (docker_runtime) {
      out["docker_runtime"] = {{"name", config.docker_runtime},
                               {"ok", docker_runtime->ok},
                               {"detail", docker_runtime->detail}};
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    PrintHuman(std::cout, report, state_dir, config, checked.errors);
    std::cout << "egress: " << egress::EgressLine(policy, /*with_usage=*/false) << "\n";
    std::cout << "oauth: " << oauth_line << "\n";
    if (docker_runtime) {
      std::cout << "docker runtime: " << (docker_runtime->ok ? "" : "FAILED: ")
                << docker_runtime->detail << "\n";
    }
    if (issuer_rule && !issuer_rule->empty())
      std::cout << "oauth: warning: " << *issuer_rule << "\n";
  }
  std::cout.flush();
  if (!checked.errors.empty()) {
    for (const auto& error : checked.errors) args.UsageError(error);
    return kExitUsage;
  }
  return report.backend.backend != "none" ? kExitOk : kExitFailure;
}

}  // namespace sandbox::cli
