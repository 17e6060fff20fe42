// The behaviour suite: every test runs once per backend (namespace, Docker, gVisor) through the
// same SessionManager, so the backends are held to one standard. A backend that cannot run here
// (no Docker daemon, no runsc, no image) skips its part with the reason.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/session/session_manager.h"

namespace sandbox::testing {

// Builds a SessionManager on the named backend ("namespace" or "docker") over the store's
// image (SANDBOX_TEST_IMAGE, default "python"), or skips the test with the reason.
class BehaviourFixture {
 public:
  explicit BehaviourFixture(const std::string& backend);
  SessionManager& manager() { return *manager_; }
  const SessionConfig& config() const { return config_; }
  // "namespace", "docker" or "gvisor": for the few expectations docs/docker.md and
  // docs/security.md "gVisor" document as different.
  const std::string& backend() const { return backend_; }
  // Code runs on gVisor's kernel: the gvisor backend, or Docker with SANDBOX_DOCKER_RUNTIME=runsc
  // (tests/runtime/gvisor/docker_runsc_test.sh), whose answers are the Sentry's too.
  bool gvisor_kernel() const { return gvisor_kernel_; }
  // Skips on gVisor's kernel (gvisor_kernel()), whose answer differs from the one this test holds
  // the others to for the reason given (listed in docs/security.md "gVisor backend").
  void GvisorDiffers(const std::string& why);
  // Skips on Docker under runsc, where the daemon's container cgroup holds the Sentry itself, so
  // a cell that reaches its memory or pids limit ends the whole sandbox (docs/docker.md "runsc").
  void DockerRunscDiffers(const std::string& why);
  // Replaces the manager with one whose config `tweak` changed (closes the old sessions).
  void Reconfigure(const std::function<void(SessionConfig&)>& tweak);
  // Creates a session or fails the test.
  std::string NewSession(const SessionOptions& options = {});
  // Runs Python in `session` and requires a transport-level success.
  RunResult Python(const std::string& session, const std::string& code, double timeout_s = 30);

 private:
  // Skips the test once the manager and the backend are gone: SkipTest ends the process without
  // destructors, and a backend left alive leaves its cgroup parents on the host.
  [[noreturn]] void Skip(const std::string& why);

  std::string backend_;
  bool gvisor_kernel_ = false;
  bool docker_runsc_ = false;
  SessionConfig config_;
  std::shared_ptr<Backend> backend_impl_;
  ImageResolver resolver_;
  std::unique_ptr<SessionManager> manager_;
};

}  // namespace sandbox::testing

// BEHAVIOUR_TEST("does x", "[tags]") { ... uses `fixture` ... } defines one test case per
// backend: "namespace: does x", "docker: does x" and "gvisor: does x".
#define BEHAVIOUR_TEST_IMPL(fn, name, tags)                      \
  static void fn(sandbox::testing::BehaviourFixture& fixture);   \
  TEST_CASE("namespace: " name, "[behaviour][namespace]" tags) { \
    sandbox::testing::BehaviourFixture fixture("namespace");     \
    fn(fixture);                                                 \
  }                                                              \
  TEST_CASE("docker: " name, "[behaviour][docker]" tags) {       \
    sandbox::testing::BehaviourFixture fixture("docker");        \
    fn(fixture);                                                 \
  }                                                              \
  TEST_CASE("gvisor: " name, "[behaviour][gvisor]" tags) {       \
    sandbox::testing::BehaviourFixture fixture("gvisor");        \
    fn(fixture);                                                 \
  }                                                              \
  static void fn(sandbox::testing::BehaviourFixture& fixture)
#define BEHAVIOUR_TEST(name, tags) \
  BEHAVIOUR_TEST_IMPL(INTERNAL_CATCH_UNIQUE_NAME(behaviour_), name, tags)
