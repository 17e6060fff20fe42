#include "tests/runtime/behaviour/behaviour_fixture.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "rootfs/store.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/docker/daemon_runtime.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/session/backend_factory.h"
#include "tests/support/test_support.h"
#include "tools/cli/wiring.h"

namespace sandbox::testing {

namespace {
std::string TestImage() {
  const char* image = std::getenv("SANDBOX_TEST_IMAGE");
  return image != nullptr && *image != '\0' ? image : "python";
}

// Writes down the name of the cgroup parent a root server of `kind` on `state_dir` makes, for
// the check after the suite (tests/runtime/gvisor/cgroups_left_check.sh) that none is left.
void RecordCgroupOwner(BackendKind kind, const std::string& state_dir) {
#ifdef SANDBOX_TEST_CGROUP_OWNERS_FILE
  if (::geteuid() != 0 || kind == BackendKind::kDocker) return;
  std::ofstream(SANDBOX_TEST_CGROUP_OWNERS_FILE, std::ios::app)
      << (kind == BackendKind::kGvisor ? gvisor::GvisorCgroupOwner(state_dir)
                                       : CgroupOwnerFor(state_dir))
      << "\n";
#else
  (void)kind;
  (void)state_dir;
#endif
}
}  // namespace

BehaviourFixture::BehaviourFixture(const std::string& backend) : backend_(backend) {
  static TempDir state;  // session records of this test process; the image store is shared
  config_.state_dir = state.path();
  config_.default_image = TestImage();
  config_.agent_dir = BinaryDir() + "/agent";
  config_.exec_timeout_s = 60;
  config_.max_sessions = 10;

  // This user's store, else the root server's (readable by all): the unprivileged run of the
  // namespace half (behaviour_tests_unpriv) uses the images CI built as root.
  auto store = std::make_shared<rootfs::ImageStore>(rootfs::ImageStore::DefaultStateDir());
  if (!store->Find(config_.default_image)) {
    auto shared = std::make_shared<rootfs::ImageStore>("/var/lib/mcp-sandbox");
    if (shared->Find(config_.default_image)) store = shared;
  }
  if (!store->Find(config_.default_image)) {
    SkipTest("image '" + config_.default_image + "' is not in the store at " + store->state_dir() +
             " (tools/test builds it with 'mcp-sandbox image build')");
  }
  resolver_ = cli::MakeImageResolver(store);

  BackendOptions options;
  auto kind = ParseBackendKind(backend);
  REQUIRE(kind);
  options.kind = *kind;
  options.state_dir = config_.state_dir;
  options.agent_dir = config_.agent_dir;
  // The Docker part under another OCI runtime (tests/gvisor/docker_runsc_test.sh: runsc).
  if (const char* runtime = std::getenv("SANDBOX_DOCKER_RUNTIME")) options.docker_runtime = runtime;
  docker_runsc_ = *kind == BackendKind::kDocker && docker::IsRunscRuntime(options.docker_runtime);
  gvisor_kernel_ = *kind == BackendKind::kGvisor || docker_runsc_;
  RecordCgroupOwner(*kind, options.state_dir);
  auto made = MakeBackend(options);
  if (!made) {
    std::string why = backend + " backend not available here: " + made.error().message;
    if (*kind == BackendKind::kDocker) SkipDockerTest(why);
    SkipTest(why);
  }
  backend_impl_ = made->backend;
  manager_ = std::make_unique<SessionManager>(config_, backend_impl_, resolver_);
}

void BehaviourFixture::Skip(const std::string& why) {
  manager_.reset();
  backend_impl_.reset();
  SkipTest(why);
}

void BehaviourFixture::GvisorDiffers(const std::string& why) {
  if (gvisor_kernel_) Skip("gvisor differs (docs/security.md \"gVisor backend\"): " + why);
}

void BehaviourFixture::DockerRunscDiffers(const std::string& why) {
  if (docker_runsc_) Skip("Docker under runsc differs (docs/docker.md \"runsc\"): " + why);
}

void BehaviourFixture::Reconfigure(const std::function<void(SessionConfig&)>& tweak) {
  manager_.reset();
  tweak(config_);
  manager_ = std::make_unique<SessionManager>(config_, backend_impl_, resolver_);
}

std::string BehaviourFixture::NewSession(const SessionOptions& options) {
  auto info = manager_->Create(options);
  if (!info) FAIL("create session: " << info.error().message);
  return info->id;
}

RunResult BehaviourFixture::Python(const std::string& session, const std::string& code,
                                   double timeout_s) {
  RunRequest request;
  request.code = code;
  request.timeout_s = timeout_s;
  auto result = manager_->Run(session, request);
  if (!result) FAIL("run: " << result.error().message);
  return *result;
}

}  // namespace sandbox::testing
