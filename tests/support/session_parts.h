// The session manager's parts, wired as its facade wires them but without it, over HostBackend
// (sandbox-init on the host): the registry, the starter, the lifecycle and, with hibernation,
// the saved sessions and the hibernator. The tests of session_lifecycle.h, session_hibernator.h
// and the starter's egress wiring drive each part through its own interface; this is the one
// setup they share (a clock the test moves, a state dir of its own, the settings below).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "runtime/session/sandbox_starter.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_config.h"
#include "runtime/session/session_hibernator.h"
#include "runtime/session/session_lifecycle.h"
#include "runtime/session/session_registry.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {

// Saved sessions in the state dir and a hibernator (idle after 10 minutes, 64 MiB a save), or
// none.
enum class Hibernation { kOff, kOn };
// Changes to the settings, made before anything is started.
using ConfigureParts = std::function<void(SessionConfig&)>;

// The defaults: a server of four sessions with a TTL of 30 minutes on the test's clock.
// `backend`: a HostBackend that says more (the egress tests'); null: HostBackend.
struct SessionParts {
  explicit SessionParts(Hibernation hibernation = Hibernation::kOff,
                        const ConfigureParts& configure = {},
                        std::unique_ptr<HostBackend> with_backend = nullptr)
      : owned_backend(with_backend ? std::move(with_backend) : std::make_unique<HostBackend>()),
        config(Settings(hibernation, configure)),
        backend(*owned_backend),
        starter(config, backend, HostImageResolver()) {
    if (hibernation == Hibernation::kOn) {
      saved = std::make_unique<SavedSessions>(SavedSessionsConfig{
          .dir = state.path() + "/hibernated",
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
  SessionParts(const SessionParts&) = delete;
  SessionParts& operator=(const SessionParts&) = delete;

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

  // Declared first: the settings read the clock and name the state dir.
  ManualClock clock;
  TempDir state;
  std::unique_ptr<HostBackend> owned_backend;
  SessionConfig config;
  HostBackend& backend;
  SandboxStarter starter;
  std::unique_ptr<SavedSessions> saved;
  std::unique_ptr<SessionRegistry> registry;
  std::unique_ptr<SessionLifecycle> lifecycle;
  std::unique_ptr<SessionHibernator> hibernator;

 private:
  SessionConfig Settings(Hibernation hibernation, const ConfigureParts& configure) {
    SessionConfig settings;
    settings.default_image = "host";
    settings.max_sessions = 4;
    settings.exec_timeout_s = 30;
    settings.ttl = std::chrono::minutes(30);
    settings.clock = [this] { return clock.Now(); };
    settings.state_dir = state.path();
    if (hibernation == Hibernation::kOn) {
      settings.hibernate_after = std::chrono::minutes(10);
      settings.saved_max_bytes = 64ull << 20;
    }
    if (configure) configure(settings);
    return settings;
  }
};

}  // namespace sandbox::testing
