// The gVisor backend against a real runsc, as root (the CI machine's mode): a sandbox's program
// talks over the stream, Kill ends it, and nothing is left behind (bundle, runsc state, cgroup);
// the orphan sweep removes what a dead server left. Skips, naming why, without runsc or root.
#include "runtime/gvisor/gvisor_backend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "rootfs/store.h"
#include "runtime/base/files.h"
#include "runtime/gvisor/runsc.h"
#include "tests/support/test_support.h"

namespace gvisor_backend_test {

using namespace sandbox;

namespace {

struct Fixture {
  testing::TempDir state;
  std::unique_ptr<gvisor::GvisorBackend> backend;
  SandboxSpec spec;

  Fixture() {
    if (::geteuid() != 0) testing::SkipTest("the gVisor backend's cgroup checks need root");
    if (auto runsc = gvisor::FindRunsc("runsc"); !runsc) testing::SkipTest(runsc.error().message);
    rootfs::ImageStore store("/var/lib/mcp-sandbox");
    auto image = store.Find("python");
    if (!image) testing::SkipTest("no image 'python' in /var/lib/mcp-sandbox (image build)");
    auto opened = gvisor::GvisorBackend::Open(
        {.state_dir = state.path(), .agent_dir = testing::BinaryDir() + "/agent"});
    REQUIRE(opened);
    backend = std::move(*opened);
    // Unique per process: ctest runs these cases at once, and a session's cgroup (and runsc's
    // container id) is named after its id on the host, not under the state dir.
    spec.session_id = fmt::format("sess_{:032x}", static_cast<unsigned>(::getpid()));
    spec.rootfs = image->rootfs;
    spec.env = {"PATH=/usr/bin:/bin"};
  }

  std::string Bundle() const { return state.path() + "/gvisor/bundles/" + spec.session_id; }
  // The host cgroups named `name` (a session's group or this server's parent), in any hierarchy.
  static std::string CgroupsNamed(const std::string& name) {
    std::string found;
    testing::RunShell("find /sys/fs/cgroup -maxdepth 4 -type d -name '" + name + "'", &found);
    return found;
  }
  bool Exists(const std::string& path) const {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
  std::string ReadAll(Sandbox& sandbox) {
    std::string text;
    char buffer[256];
    for (;;) {
      auto got =
          sandbox.stream().Read(buffer, sizeof buffer, Clock::now() + std::chrono::seconds(30));
      if (!got || *got == 0) return text;
      text.append(buffer, *got);
    }
  }
};

}  // namespace

TEST_CASE(
    "gvisor backend: a program speaks over the stream from gVisor's kernel and leaves "
    "nothing behind",
    "[gvisor]") {
  Fixture f;
  {
    auto sandbox = f.backend->StartProgram(
        f.spec, {"/bin/sh", "-c", "echo hello; uname -r; id -u; read line; echo got $line"});
    REQUIRE(sandbox);
    CHECK((*sandbox)->backend_name() == "gvisor");
    CHECK(f.Exists(f.Bundle() + "/config.json"));
    REQUIRE((*sandbox)->stream().Write("ping\n"));
    std::string text = f.ReadAll(**sandbox);
    CHECK(text == "hello\n4.4.0\n1000\ngot ping\n");
    CHECK((*sandbox)->Usage().memory_bytes > 0);  // the cgroup holds the Sentry
  }
  CHECK_FALSE(f.Exists(f.Bundle()));
  auto list = gvisor::RunRunsc({f.backend->runsc().runsc_path,
                                "--root=" + f.state.path() + "/gvisor/runsc", "list", "-quiet"});
  REQUIRE(list);
  CHECK(*list == "");
}

TEST_CASE("gvisor backend: Kill ends a sandbox that would run forever", "[gvisor]") {
  Fixture f;
  auto sandbox = f.backend->StartProgram(f.spec, {"/bin/sh", "-c", "echo up; exec sleep 1000"});
  REQUIRE(sandbox);
  char byte;
  REQUIRE((*sandbox)->stream().Read(&byte, 1, Clock::now() + std::chrono::seconds(30)));
  auto started = Clock::now();
  REQUIRE((*sandbox)->Kill());
  f.ReadAll(**sandbox);  // ends: the stream closes with the sandbox
  CHECK(Clock::now() - started < std::chrono::seconds(10));
}

// runsc daemonizes the Sentry and the Gofer under `runsc run`; killed, they fell to pid 1, and
// `runsc delete` waited for pid 1 to reap them: 1.1-2 s a close on the CI machine, whose pid 1
// reaps slowly. Started from a reaper of the backend's own (a child subreaper), a close takes
// 30-100 ms. The bound leaves room for a loaded machine and none for the old wait.
TEST_CASE("gvisor backend: closing a killed sandbox does not wait for pid 1 to reap it",
          "[gvisor]") {
  Fixture f;
  std::vector<double> closes_ms;
  for (int i = 0; i < 3; ++i) {
    auto sandbox = f.backend->StartProgram(f.spec, {"/bin/sh", "-c", "echo up; exec sleep 1000"});
    REQUIRE(sandbox);
    char byte;
    REQUIRE((*sandbox)->stream().Read(&byte, 1, Clock::now() + std::chrono::seconds(30)));
    auto closing = Clock::now();
    REQUIRE((*sandbox)->Kill());
    sandbox->reset();
    closes_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - closing).count());
    CHECK_FALSE(f.Exists(f.Bundle()));
  }
  std::sort(closes_ms.begin(), closes_ms.end());
  INFO("closes (ms): " << closes_ms[0] << " " << closes_ms[1] << " " << closes_ms[2]);
  CHECK(closes_ms[1] < 600);
  auto list = gvisor::RunRunsc({f.backend->runsc().runsc_path,
                                "--root=" + f.state.path() + "/gvisor/runsc", "list", "-quiet"});
  REQUIRE(list);
  CHECK(*list == "");
}

TEST_CASE("gvisor backend: a sandbox that cannot start says why, from runsc's log", "[gvisor]") {
  Fixture f;
  auto sandbox = f.backend->StartProgram(f.spec, {"/no/such/program"});
  REQUIRE_FALSE(sandbox);
  CHECK(sandbox.error().message.find("runsc log") != std::string::npos);
  CHECK(sandbox.error().message.find("/no/such/program") != std::string::npos);
  CHECK_FALSE(f.Exists(f.Bundle()));
  CHECK(Fixture::CgroupsNamed(f.spec.session_id) == "");
  // The server's own parents go with its backend (a state dir of its own).
  const std::string owner = gvisor::GvisorCgroupOwner(f.state.path());
  CHECK(Fixture::CgroupsNamed(owner) != "");
  f.backend.reset();
  CHECK(Fixture::CgroupsNamed(owner) == "");
}

TEST_CASE("gvisor backend: the sweep removes the bundle of a server that is gone", "[gvisor]") {
  Fixture f;
  const std::string orphan =
      f.state.path() + "/gvisor/bundles/sess_00000000000000000000000000000001";
  REQUIRE(MakeDirs(orphan));
  REQUIRE(WriteFile(orphan + "/owner", "999999999 1\n"));  // no such process
  auto swept = f.backend->SweepOrphans();
  REQUIRE(swept);
  CHECK(*swept == 1);
  CHECK_FALSE(f.Exists(orphan));
}

}  // namespace gvisor_backend_test
