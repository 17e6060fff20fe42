// Shared by the Docker integration tests: a connected backend (or a skip saying why), the image
// sandboxes run, fake agents for tests that drive a plain shell, and shell helpers over the
// attach stream.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/docker/docker_backend.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {

// Skips unless running as root with a Docker daemon answering (DOCKER_HOST or the default
// socket); tools/lib/dockerd.sh starts one.
std::unique_ptr<docker::DockerBackend> ConnectDockerOrSkip(
    docker::DockerBackendOptions options = {});

// The image the tests run: $SANDBOX_DOCKER_IMAGE, else mcp-sandbox/python:latest (the
// project's, after `image build`), else mcp-sandbox-test/python:bookworm (a plain Debian rootfs
// with python3). Loaded from $SANDBOX_DOCKER_IMAGE_ARCHIVE when set and missing. Skips when no
// image with python3 is available.
std::string DockerTestImageOrSkip(docker::DockerBackend& backend);

// A directory, readable by uid 1000, whose sandbox-init is the given /bin/sh script body.
class FakeAgentDir {
 public:
  explicit FakeAgentDir(const std::string& script = "exec /bin/sh\n");
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
};

// A SandboxSpec with a fresh session id for `image` and `agent_dir`, default limits.
SandboxSpec DockerSpec(const std::string& image, const std::string& agent_dir);

// Runs `command` in the sandbox's shell (a FakeAgentDir sandbox) and returns what it printed
// on stdout. Fails the test on timeout or EOF.
std::string ShellRun(ByteStream& stream, const std::string& command,
                     std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Reads protocol bytes until EOF; fails the test on an error or timeout.
std::string ReadToEof(ByteStream& stream, std::chrono::milliseconds timeout);

}  // namespace sandbox::testing
