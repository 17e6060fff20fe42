#include "tests/fuzz/no_backend_server.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace sandbox::fuzz {

namespace {

// Starts nothing: Start() fails as a backend does when its daemon or kernel feature is gone.
class NoSandboxBackend : public Backend {
 public:
  std::string name() const override { return "none"; }
  Result<std::unique_ptr<Sandbox>> Start(const SandboxSpec&) override {
    return Fail(ErrorCode::kSandboxUnavailable, "the fuzz target's backend starts no sandbox");
  }
  EnforcedLimits PlanLimits(const Limits&) const override { return {}; }
  Result<int> SweepOrphans() override { return 0; }
};

}  // namespace

NoBackendServer::NoBackendServer() {
  // Error logs of refused input would flood the fuzzer's output and slow it down.
  spdlog::set_level(spdlog::level::off);
  char dir[] = "/tmp/mcp-sandbox-fuzz-XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  state_dir = dir;
  SessionConfig config;
  config.state_dir = state_dir;
  config.default_image = "python";
  config.agent_dir = state_dir;
  ImageResolver resolver = [](const std::string& name) -> Result<ResolvedImage> {
    if (name != "python") return Fail(ErrorCode::kNotFound, "no image {}", name);
    ResolvedImage image;
    image.name = name;
    image.rootfs = "/nonexistent";
    return image;
  };
  sessions =
      std::make_unique<SessionManager>(config, std::make_shared<NoSandboxBackend>(), resolver);
  mcp::ServerOptions options;
  options.worker_threads = 2;
  options.instructions = mcp::SandboxInstructions(settings, sessions->config().egress);
  options.resources = mcp::SandboxResources(*sessions, settings);
  server = std::make_unique<mcp::Server>(options, mcp::SandboxTools(*sessions, settings));
}

NoBackendServer::~NoBackendServer() {
  server.reset();
  sessions.reset();
  std::error_code ec;
  std::filesystem::remove_all(state_dir, ec);
}

NoBackendServer& SharedNoBackendServer() {
  // Leaked on purpose: libFuzzer exits without unwinding, and the workers must not outlive
  // a destroyed server on any other path.
  static NoBackendServer* shared = new NoBackendServer();
  return *shared;
}

}  // namespace sandbox::fuzz
