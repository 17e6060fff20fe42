// The session manager's parts, wired as its facade wires them but without it, over HostBackend
// (sandbox-init on the host): the registry, the starter, the lifecycle and, with a state dir,
// the saved sessions and the hibernator. The tests of session_lifecycle.h and
// session_hibernator.h drive each part through its own interface.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/session/sandbox_starter.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_config.h"
#include "runtime/session/session_hibernator.h"
#include "runtime/session/session_lifecycle.h"
#include "runtime/session/session_registry.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"

namespace sandbox::testing {

// A server's settings for the parts' tests: a TTL of 30 minutes on `clock`, four sessions.
inline SessionConfig PartsConfig(ManualClock& clock) {
  SessionConfig config;
  config.default_image = "host";
  config.max_sessions = 4;
  config.exec_timeout_s = 30;
  config.ttl = std::chrono::minutes(30);
  config.clock = [&clock] { return clock.Now(); };
  return config;
}

struct SessionParts {
  // `state_dir` "": hibernation off (no saved sessions, no hibernator).
  explicit SessionParts(SessionConfig settings, const std::string& state_dir = "")
      : config(std::move(settings)), starter(config, backend, HostImageResolver()) {
    if (!state_dir.empty()) {
      saved = std::make_unique<SavedSessions>(SavedSessionsConfig{
          .dir = state_dir + "/hibernated",
          .max_total_bytes = config.saved_max_bytes,
          .ttl = config.saved_ttl,
          .clock = config.clock,
      });
    }
    registry = std::make_unique<SessionRegistry>(config.replica_id, saved.get());
    lifecycle = std::make_unique<SessionLifecycle>(config, backend, starter, *registry);
    hibernator = std::make_unique<SessionHibernator>(config, *registry, *lifecycle, saved.get());
    lifecycle->Start(saved ? hibernator.get() : nullptr);
  }
  ~SessionParts() {
    lifecycle->Stop();
    lifecycle->CloseAll();
  }

  std::shared_ptr<LiveSession> Create(SessionOptions options = {}) {
    auto session = lifecycle->Create(options);
    INFO((session ? std::string() : session.error().message));
    REQUIRE(session);
    return *session;
  }
  // Runs `code` in session `id` under a lease, as a call does; the lease is given back after.
  Result<RunResult> Python(const std::string& id, const std::string& code) {
    SBX_ASSIGN_OR_RETURN(BusyLease lease, lifecycle->Acquire(id));
    RunRequest request;
    request.code = code;
    request.timeout_s = 20;
    return lease->agent->Run(request, {});
  }
  std::string Stdout(const std::string& id, const std::string& code) {
    auto result = Python(id, code);
    INFO(code);
    INFO((result ? result->stderr_text : result.error().message));
    REQUIRE(result);
    CHECK(result->exit_code == 0);
    return result->stdout_text;
  }
  // The sandbox started for session `id` last (a resume starts another).
  std::shared_ptr<HostSandboxControl> Started(const std::string& id) {
    std::shared_ptr<HostSandboxControl> found;
    for (const auto& control : backend.started()) {
      if (control->spec.session_id == id) found = control;
    }
    return found;
  }

  SessionConfig config;
  HostBackend backend;
  SandboxStarter starter;
  std::unique_ptr<SavedSessions> saved;
  std::unique_ptr<SessionRegistry> registry;
  std::unique_ptr<SessionLifecycle> lifecycle;
  std::unique_ptr<SessionHibernator> hibernator;
};

}  // namespace sandbox::testing
