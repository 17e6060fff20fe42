#include "tests/runtime/docker/docker_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "runtime/base/files.h"
#include "runtime/session/session_id.h"

namespace sandbox::testing {

std::unique_ptr<docker::DockerBackend> ConnectDockerOrSkip(docker::DockerBackendOptions options) {
  if (::geteuid() != 0) SkipTest("the Docker tests run as root only (the socket is root's)");
  auto backend = docker::DockerBackend::Connect(std::move(options));
  if (!backend) {
    SkipDockerTest(
        fmt::format("{} (start one with tools/lib/dockerd.sh start)", backend.error().message));
  }
  return std::move(*backend);
}

std::string DockerTestImageOrSkip(docker::DockerBackend& backend) {
  const char* wanted = std::getenv("SANDBOX_DOCKER_IMAGE");
  const char* archive = std::getenv("SANDBOX_DOCKER_IMAGE_ARCHIVE");
  if (wanted != nullptr && *wanted != '\0') {
    auto ensured = backend.EnsureImage(wanted, archive != nullptr ? archive : "");
    if (!ensured) SkipDockerTest("SANDBOX_DOCKER_IMAGE: " + ensured.error().message);
    return wanted;
  }
  for (const char* image : {"mcp-sandbox/python:latest", "mcp-sandbox-test/python:bookworm"}) {
    auto present = backend.engine().ImageExists(image);
    REQUIRE(present);
    if (*present) return image;
  }
  if (archive != nullptr && *archive != '\0') {
    auto ensured = backend.EnsureImage("mcp-sandbox/python:latest", archive);
    if (!ensured) SkipDockerTest(ensured.error().message);
    return "mcp-sandbox/python:latest";
  }
  SkipDockerTest(
      "no test image in the Docker daemon: run `mcp-sandbox image build` and load it, set "
      "SANDBOX_DOCKER_IMAGE(_ARCHIVE), or `docker import` a Debian rootfs with python3 as "
      "mcp-sandbox-test/python:bookworm");
}

FakeAgentDir::FakeAgentDir(const std::string& script) {
  REQUIRE(::chmod(dir_.path().c_str(), 0755) == 0);
  REQUIRE(WriteFile(dir_.Join("sandbox-init"), "#!/bin/sh\n" + script, 0755));
}

SandboxSpec DockerSpec(const std::string& image, const std::string& agent_dir) {
  SandboxSpec spec;
  spec.session_id = NewSessionId();
  spec.image_name = image;
  spec.docker.reference = image;
  spec.agent_dir = agent_dir;
  spec.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              "HOME=/mnt/data"};
  return spec;
}

std::string ShellRun(ByteStream& stream, const std::string& command,
                     std::chrono::milliseconds timeout) {
  static std::atomic<int> counter = 0;  // tests may drive shells from several threads
  std::string marker = fmt::format("__done_{}__", ++counter);
  REQUIRE(stream.Write(command + "\necho " + marker + "\n"));
  auto deadline = Clock::now() + timeout;
  std::string output;
  char buf[4096];
  while (output.find(marker + "\n") == std::string::npos) {
    auto n = stream.Read(buf, sizeof buf, deadline);
    if (!n) FAIL("shell read: " << n.error().message << "; so far: " << output);
    if (*n == 0) FAIL("shell ended early; so far: " << output);
    output.append(buf, *n);
  }
  return output.substr(0, output.find(marker + "\n"));
}

std::string ReadToEof(ByteStream& stream, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::string output;
  char buf[4096];
  for (;;) {
    auto n = stream.Read(buf, sizeof buf, deadline);
    if (!n) FAIL("read: " << n.error().message << "; so far: " << output);
    if (*n == 0) return output;
    output.append(buf, *n);
  }
}

}  // namespace sandbox::testing
