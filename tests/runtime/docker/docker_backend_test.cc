// Integration tests of the Docker backend against a real daemon (root only; skipped with the
// reason when none answers). Sandboxes here run a plain /bin/sh as their "agent" so the
// container machinery is tested on its own; agent_over_docker_test.cc runs the real agent.
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/docker/container_cgroup.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/hijacked_connection.h"
#include "runtime/docker/owner.h"
#include "runtime/docker/stream_demuxer.h"
#include "tests/runtime/docker/docker_fixture.h"
#include "tests/support/cpu_window.h"

namespace docker_backend_test {

using namespace sandbox;
using namespace sandbox::testing;
using nlohmann::json;
using std::chrono::seconds;

namespace {

json Inspect(docker::DockerBackend& backend, const std::string& name) {
  auto inspected = backend.engine().InspectContainer(name);
  REQUIRE(inspected);
  return *inspected;
}

bool ContainerExists(docker::DockerBackend& backend, const std::string& name) {
  auto inspected = backend.engine().InspectContainer(name);
  if (!inspected) REQUIRE(inspected.error().code == ErrorCode::kNotFound);
  return inspected.has_value();
}

}  // namespace

TEST_CASE("docker: the daemon answers and the API version is negotiated, not pinned", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  const auto& info = backend->engine().info();
  CHECK(info.api_version >= docker::kOldestApiVersion);
  CHECK(info.api_version <= info.server_api_version);
  CHECK(info.api_version == std::min(info.server_api_version, docker::kNewestApiVersion));
  CHECK_FALSE(info.server_version.empty());
  CHECK(backend->engine().Versioned("/info") == "/v" + info.api_version.ToString() + "/info");
  CHECK(backend->name() == "docker");
}

TEST_CASE("docker: an image missing from the daemon is loaded from its archive", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  TempDir dir;
  // A docker-save archive of a tag the daemon then forgets (its layers stay: fast to load).
  std::string tag = fmt::format("mcp-sandbox-loadtest:{}", getpid());
  std::string archive = dir.Join("image.tar");
  REQUIRE(RunShell(fmt::format("docker tag {} {} && docker save -o {} {} && docker rmi {} "
                               ">/dev/null",
                               image, tag, archive, tag, tag)) == 0);
  REQUIRE_FALSE(backend->engine().ImageExists(tag).value());

  auto missing = backend->EnsureImage(tag, "");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK_THAT(missing.error().message, Catch::Contains(tag));

  REQUIRE(WriteFile(dir.Join("garbage.tar"), std::string(4096, 'x')));
  auto bad = backend->EnsureImage(tag, dir.Join("garbage.tar"));
  REQUIRE_FALSE(bad);
  INFO(bad.error().message);

  auto loaded = backend->EnsureImage(tag, archive);
  INFO((loaded ? std::string() : loaded.error().message));
  CHECK(loaded);
  CHECK(backend->engine().ImageExists(tag).value());
  CHECK(backend->EnsureImage(tag, "/nonexistent").has_value());  // present: archive not read
  RunShell("docker rmi " + tag + " >/dev/null 2>&1");
}

TEST_CASE("docker: containers get every hardening setting", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  SandboxSpec spec = DockerSpec(image, agent.path());
  spec.limits.memory_bytes = 200ull << 20;
  spec.limits.cpus = 0.5;
  spec.limits.pids = 64;
  spec.limits.tmp_bytes = 32ull << 20;
  spec.limits.disk_bytes = 48ull << 20;
  spec.limits.open_files = 256;
  auto sandbox = backend->Start(spec);
  REQUIRE(sandbox);
  std::string name = docker::ContainerNameFor(spec.session_id);
  json container = Inspect(*backend, name);
  const json& host = container["HostConfig"];
  const json& config = container["Config"];

  CHECK(host["NetworkMode"] == "none");
  CHECK(config["NetworkDisabled"] == true);
  CHECK(host["CapDrop"] == json::array({"ALL"}));
  CHECK((host["CapAdd"].is_null() || host["CapAdd"].empty()));
  CHECK(host["Privileged"] == false);
  CHECK(host["ReadonlyRootfs"] == true);
  REQUIRE(host["SecurityOpt"].is_array());
  CHECK(host["SecurityOpt"][0] == "no-new-privileges:true");
  if (!backend->seccomp_profile_json().empty()) {
    REQUIRE(host["SecurityOpt"].size() == 2);
    CHECK(host["SecurityOpt"][1].get<std::string>().rfind("seccomp=", 0) == 0);
  }
  CHECK(host["Memory"] == 200ll << 20);
  if (backend->engine().info().swap_limit) CHECK(host["MemorySwap"] == 200ll << 20);
  CHECK(host["NanoCpus"] == 500'000'000);
  CHECK(host["PidsLimit"] == 64);
  CHECK(host["Init"] == false);
  CHECK(host["IpcMode"] == "private");
  CHECK(host["CgroupnsMode"] == "private");
  CHECK(host["Tmpfs"]["/tmp"] == "rw,exec,nosuid,nodev,size=33554432,mode=1777");
  CHECK(config["User"] == "1000:1000");
  CHECK(config["Hostname"] == "sandbox");
  CHECK(config["Labels"]["mcp-sandbox.session"] == spec.session_id);
  CHECK(config["Labels"]["mcp-sandbox.owner"] == backend->owner());
  CHECK(container["Path"] == "/.sandbox/sandbox-init");
  CHECK(container["State"]["Running"] == true);

  // What the sandboxed process actually gets.
  ByteStream& sh = (*sandbox)->stream();
  CHECK(ShellRun(sh, "id -u; id -g") == "1000\n1000\n");
  std::string status = ShellRun(sh,
                                "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' "
                                "/proc/self/status | tr -d ' \\t'");
  CHECK_THAT(status, Catch::Contains("CapPrm:0000000000000000"));
  CHECK_THAT(status, Catch::Contains("CapEff:0000000000000000"));
  CHECK_THAT(status, Catch::Contains("CapBnd:0000000000000000"));
  CHECK_THAT(status, Catch::Contains("NoNewPrivs:1"));
  CHECK_THAT(status, Catch::Contains("Seccomp:2"));
  CHECK(ShellRun(sh, "touch /etc/x 2>/dev/null || echo read-only") == "read-only\n");
  CHECK(ShellRun(sh, "ls /sys/class/net") == "lo\n");
  CHECK(ShellRun(sh, "hostname") == "sandbox\n");
  CHECK(ShellRun(sh, "stat -c '%u %g %a' /mnt/data; stat -c %a /tmp") == "1000 1000 755\n1777\n");
  std::string mounts = ShellRun(sh, "grep -E ' (/tmp|/mnt/data|/.sandbox) ' /proc/mounts");
  CHECK_THAT(mounts, Catch::Contains("tmpfs /tmp tmpfs rw,nosuid,nodev,relatime,size=32768k"));
  CHECK_THAT(mounts, Catch::Contains("tmpfs /mnt/data tmpfs rw,nosuid,nodev,relatime,size=49152k"));
  CHECK_THAT(mounts, Catch::Contains(" /.sandbox ") && Catch::Contains("ro,"));
  CHECK(ShellRun(sh, "ulimit -n; ulimit -c") == "256\n0\n");
  // Counters charged to the (host-shared) uid are capped per process.
  CHECK(
      ShellRun(sh,
               "grep -E 'pending signals|msgqueue' /proc/self/limits | tr -s ' ' | sed 's/ $//'") ==
      "Max pending signals 1024 1024 signals\nMax msgqueue size 819200 819200 bytes\n");
  CHECK(ShellRun(sh, "echo x > /mnt/data/f && cat /mnt/data/f && echo y > /tmp/g && cat /tmp/g") ==
        "x\ny\n");
  // The container's own command is pid 1 (no docker-init in front of it).
  CHECK(ShellRun(sh, "cat /proc/1/comm") == "sh\n");

  EnforcedLimits enforced = (*sandbox)->enforced_limits();
  CHECK(enforced.cgroup_mode == "docker");
  CHECK((*sandbox)->backend_name() == "docker");
}

TEST_CASE("docker: the demuxer splits real attach frames at every chunk size", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent(
      "i=0; while [ $i -lt 50 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done\n"
      "printf 'no newline'\n");
  SandboxSpec spec = DockerSpec(image, agent.path());
  auto container = docker::ContainerSpecFor(spec, image, {backend->host(), "test/1/1/1", ""}, "");
  REQUIRE(container);
  const auto& engine = backend->engine();
  auto created = engine.CreateContainer(container->name, docker::CreateContainerBody(*container));
  REQUIRE(created);
  auto connection = engine.AttachContainer(created->id);
  REQUIRE(connection);
  REQUIRE(engine.StartContainer(created->id));
  std::string raw = connection->early_bytes;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(connection->fd.get(), buf, sizeof buf)) > 0) {
    raw.append(buf, static_cast<size_t>(n));
  }
  REQUIRE(engine.RemoveContainer(created->id));

  std::string want_out, want_err;
  for (int i = 0; i < 50; ++i) {
    want_out += fmt::format("out{}\n", i);
    want_err += fmt::format("err{}\n", i);
  }
  want_out += "no newline";
  for (size_t chunk = 1; chunk <= 64; ++chunk) {
    docker::StreamDemuxer demuxer;
    std::string out, err;
    for (size_t pos = 0; pos < raw.size(); pos += chunk) {
      REQUIRE(demuxer.Feed(std::string_view(raw).substr(pos, chunk),
                           [&](docker::StreamType stream, std::string_view payload) {
                             (stream == docker::StreamType::kStdout ? out : err).append(payload);
                           }));
    }
    INFO("chunk " << chunk);
    REQUIRE(out == want_out);
    REQUIRE(err == want_err);
    REQUIRE(demuxer.at_frame_boundary());
  }
}

TEST_CASE("docker: closing the write side gives the agent EOF, then the stream ends", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent("while read line; do echo \"got $line\"; done; echo bye\n");
  auto sandbox = backend->Start(DockerSpec(image, agent.path()));
  REQUIRE(sandbox);
  ByteStream& stream = (*sandbox)->stream();
  REQUIRE(stream.Write("a\nb\n"));
  stream.CloseWrite();
  CHECK(ReadToEof(stream, std::chrono::seconds(20)) == "got a\ngot b\nbye\n");
}

TEST_CASE("docker: a read past its deadline times out, a later read still works", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  auto sandbox = backend->Start(DockerSpec(image, agent.path()));
  REQUIRE(sandbox);
  ByteStream& sh = (*sandbox)->stream();
  char buf[16];
  auto started = Clock::now();
  auto nothing = sh.Read(buf, sizeof buf, Clock::now() + std::chrono::milliseconds(300));
  REQUIRE_FALSE(nothing);
  CHECK(nothing.error().code == ErrorCode::kTimeout);
  CHECK(Clock::now() - started >= std::chrono::milliseconds(290));
  CHECK(ShellRun(sh, "echo still here") == "still here\n");
}

TEST_CASE("docker: Kill stops everything and destruction removes the container", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  SandboxSpec spec = DockerSpec(image, agent.path());
  std::string name = docker::ContainerNameFor(spec.session_id);
  {
    auto sandbox = backend->Start(spec);
    REQUIRE(sandbox);
    ShellRun((*sandbox)->stream(), "sleep 1000 & sleep 1000 &");
    REQUIRE((*sandbox)->Kill());
    REQUIRE((*sandbox)->Kill());  // idempotent
    CHECK(Inspect(*backend, name)["State"]["Running"] == false);
    // The agent's stream ends.
    ReadToEof((*sandbox)->stream(), std::chrono::seconds(20));
    CHECK(ContainerExists(*backend, name));
  }
  CHECK_FALSE(ContainerExists(*backend, name));
  auto labelled =
      backend->engine().ListContainers(std::string("mcp-sandbox.session=") + spec.session_id);
  REQUIRE(labelled);
  CHECK(labelled->empty());
}

TEST_CASE("docker: a failed start leaves no container behind", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  // runc fails at start: it cannot make this working directory.
  SandboxSpec spec = DockerSpec(image, agent.path());
  spec.workdir = "/proc/self/nope";
  auto sandbox = backend->Start(spec);
  REQUIRE_FALSE(sandbox);
  CHECK(sandbox.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(sandbox.error().message, Catch::Contains("start container"));
  CHECK_FALSE(ContainerExists(*backend, docker::ContainerNameFor(spec.session_id)));

  // The daemon refuses the create: nothing was made.
  SandboxSpec no_agent = DockerSpec(image, "/nonexistent/agent");
  auto refused = backend->Start(no_agent);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("create container"));
  CHECK_FALSE(ContainerExists(*backend, docker::ContainerNameFor(no_agent.session_id)));

  SandboxSpec no_image = DockerSpec("mcp-sandbox-no-such-image:1", agent.path());
  auto missing = backend->Start(no_image);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK_FALSE(ContainerExists(*backend, docker::ContainerNameFor(no_image.session_id)));
}

TEST_CASE("docker: an agent that cannot run fails the start and leaves no container", "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  TempDir empty_agent;  // no sandbox-init: the container's pid 1 cannot be executed
  REQUIRE(::chmod(empty_agent.path().c_str(), 0755) == 0);
  SandboxSpec spec = DockerSpec(image, empty_agent.path());
  auto sandbox = backend->Start(spec);
  REQUIRE_FALSE(sandbox);
  CHECK_THAT(sandbox.error().message, Catch::Contains("start container"));
  CHECK_FALSE(ContainerExists(*backend, docker::ContainerNameFor(spec.session_id)));
}

TEST_CASE("docker: the orphan sweep removes containers of gone servers of this host only",
          "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  const auto& engine = backend->engine();
  const docker::LocalIdentity local = docker::CurrentIdentity();
  auto create = [&](const docker::ContainerOwner& owner, bool running) {
    SandboxSpec spec = DockerSpec(image, agent.path());
    auto container = docker::ContainerSpecFor(spec, image, owner, "");
    REQUIRE(container);
    auto created = engine.CreateContainer(container->name, docker::CreateContainerBody(*container));
    REQUIRE(created);
    if (running) REQUIRE(engine.StartContainer(created->id));
    return container->name;
  };
  // A server of this host that "crashed": its containers carry an owner that no longer runs.
  const std::string dead_here = local.boot_id + "/" + local.pid_ns + "/2147483646/1";
  std::vector<std::string> orphans;
  for (bool running : {true, false})
    orphans.push_back(create({local.host, dead_here, ""}, running));
  // Another host sharing this daemon, whose owner names a pid that is dead *here* (and so
  // looks gone to a sweep that judges it on this host): its sessions must survive.
  const std::string other_host = "another-machine-id/another-host";
  std::vector<std::string> foreign = {
      create({other_host, local.boot_id + "/" + local.pid_ns + "/2147483646/1", ""}, true),
      create({other_host, "another-boot/4026531836/1/1", ""}, false),
      // A server in another pid namespace of this host (another container on this kernel).
      create({local.host, local.boot_id + "/1/2147483646/1", ""}, true),
  };
  // A live sandbox of this server, which must survive.
  auto live = backend->Start(DockerSpec(image, agent.path()));
  REQUIRE(live);

  // The counts are not asserted: another server of this host (a test running beside this one)
  // may sweep the same orphans first, and its crashed servers' containers may be swept here.
  // What must hold is which containers are gone and which stay.
  REQUIRE(backend->SweepOrphans());
  for (const auto& orphan : orphans) CHECK_FALSE(ContainerExists(*backend, orphan));
  for (const auto& name : foreign) CHECK(ContainerExists(*backend, name));
  CHECK(ShellRun((*live)->stream(), "echo alive") == "alive\n");
  REQUIRE(backend->SweepOrphans());
  for (const auto& name : foreign) CHECK(ContainerExists(*backend, name));
  CHECK(ShellRun((*live)->stream(), "echo still alive") == "still alive\n");
  for (const auto& name : foreign) REQUIRE(engine.RemoveContainer(name));
}

TEST_CASE("docker: a session's name held by a gone server's or its own last container is freed",
          "[docker]") {
  // A start-up sweep that raced a removal, or a resume right after a hibernation whose
  // container is still being removed: the next sandbox of the session must start all the same,
  // while a live other server's container of that name is never removed.
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  const auto& engine = backend->engine();
  const docker::LocalIdentity local = docker::CurrentIdentity();
  SandboxSpec spec = DockerSpec(image, agent.path());
  auto hold = [&](const docker::ContainerOwner& owner) {
    auto container = docker::ContainerSpecFor(spec, image, owner, "");
    REQUIRE(container);
    auto created = engine.CreateContainer(container->name, docker::CreateContainerBody(*container));
    REQUIRE(created);
    REQUIRE(engine.StartContainer(created->id));
    return created->id;
  };
  const std::string gone = local.boot_id + "/" + local.pid_ns + "/2147483646/1";
  std::string stale = hold({local.host, gone, ""});
  {
    auto started = backend->Start(spec);
    INFO((started ? std::string() : started.error().message));
    REQUIRE(started);
    CHECK(ShellRun((*started)->stream(), "echo up") == "up\n");
  }
  CHECK_FALSE(ContainerExists(*backend, stale));
  // Its own earlier sandbox of the session, killed when the session was saved and not yet
  // removed (its last reference not dropped, on a loaded host; seen in tests/e2e/fleet.test.mjs
  // on Docker at load 100): the start removes it instead of failing with the daemon's 409, and
  // that sandbox's own removal (by container id) later leaves the new one alone.
  const std::string name = docker::ContainerNameFor(spec.session_id);
  auto previous = backend->Start(spec);
  REQUIRE(previous);
  REQUIRE((*previous)->Kill());
  REQUIRE(ContainerExists(*backend, name));
  {
    auto started = backend->Start(spec);
    INFO((started ? std::string() : started.error().message));
    REQUIRE(started);
    CHECK(ShellRun((*started)->stream(), "echo resumed") == "resumed\n");
    previous->reset();
    CHECK(ContainerExists(*backend, name));
    CHECK(ShellRun((*started)->stream(), "echo still") == "still\n");
  }
  CHECK_FALSE(ContainerExists(*backend, name));
  // A live other server of this host holds it (this test process stands in for that server,
  // seen from a backend with an owner of its own): refused, and its container kept.
  std::string foreign = hold({local.host, docker::CurrentOwner(), ""});
  docker::DockerBackendOptions options;
  options.owner = local.boot_id + "/" + local.pid_ns + "/2147483645/1";
  auto other = ConnectDockerOrSkip(options);
  auto refused = other->Start(spec);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("not ours to remove") != std::string::npos);
  CHECK(ContainerExists(*backend, foreign));
  REQUIRE(engine.RemoveContainer(foreign));
}

TEST_CASE("docker: usage is read from the container and an OOM-killed child is counted",
          "[docker]") {
  for (bool engine_api : {false, true}) {
    DYNAMIC_SECTION((engine_api ? "through the Engine API" : "from the container's cgroup")) {
      docker::DockerBackendOptions options;
      options.usage_from_engine_api = engine_api;
      auto backend = ConnectDockerOrSkip(options);
      std::string image = DockerTestImageOrSkip(*backend);
      FakeAgentDir agent;
      SandboxSpec spec = DockerSpec(image, agent.path());
      spec.limits.memory_bytes = 64ull << 20;
      auto sandbox = backend->Start(spec);
      REQUIRE(sandbox);
      ByteStream& sh = (*sandbox)->stream();
      ShellRun(sh, "sleep 1000 &");
      SandboxUsage before = (*sandbox)->Usage();
      CHECK(before.memory_bytes > 0);
      CHECK(before.pids >= 2);  // sh (pid 1), sleep
      CHECK(before.oom_kills == 0);
      // A child allocating past the limit is killed; the sandbox (the shell) lives on.
      std::string result =
          ShellRun(sh,
                   "python3 -c 'b = bytearray(256 << 20); b[::4096] = b\"x\" * len(b[::4096])'"
                   " 2>/dev/null; echo exit=$?");
      CHECK(result == "exit=137\n");
      uint64_t kills = 0;
      for (int i = 0; i < 50 && kills == 0; ++i) {  // the daemon's event may trail the exit
        kills = (*sandbox)->Usage().oom_kills;
        if (kills == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      CHECK(kills >= 1);
      CHECK((*sandbox)->Usage().memory_peak_bytes >= (32ull << 20));
      CHECK(ShellRun(sh, "echo alive") == "alive\n");
    }
  }
}

namespace {

// The container's cgroup on this host (skips where it is not visible or has no cpu controller).
docker::ContainerCgroupPaths CgroupOf(docker::DockerBackend& backend, const std::string& name) {
  json container = Inspect(backend, name);
  auto cgroup = docker::FindContainerCgroup(container["State"]["Pid"].get<pid_t>(),
                                            container["Id"].get<std::string>());
  if (!cgroup) SkipTest("the container's cgroup is not visible here: " + cgroup.error().message);
  if (cgroup->cpu_control.empty()) SkipTest("no cpu controller for containers here");
  return *cgroup;
}

// The container's cpu.shares (v1) or cpu.weight (v2).
uint64_t CpuWeightOf(docker::DockerBackend& backend, const std::string& name) {
  auto weight = docker::ReadContainerCpuWeight(CgroupOf(backend, name));
  REQUIRE(weight);
  return weight->value;
}

// The container's CPU quota in microseconds (-1: none): v2 cpu.max, v1 cpu.cfs_quota_us.
long CpuQuotaOf(docker::DockerBackend& backend, const std::string& name) {
  docker::ContainerCgroupPaths cgroup = CgroupOf(backend, name);
  if (cgroup.v2) {
    auto text = cgroup::ReadControl(cgroup.cpu_control + "/cpu.max");
    REQUIRE(text);
    auto parsed = cgroup::ParseCpuMax(*text);
    REQUIRE(parsed);
    return parsed->first;
  }
  auto text = cgroup::ReadControl(cgroup.cpu_control + "/cpu.cfs_quota_us");
  REQUIRE(text);
  return std::stol(*text);
}

}  // namespace

TEST_CASE(
    "docker: a background container is capped while foreground calls run and raised at a claim",
    "[docker]") {
  auto backend = ConnectDockerOrSkip();
  std::string image = DockerTestImageOrSkip(*backend);
  FakeAgentDir agent;
  SandboxSpec normal_spec = DockerSpec(image, agent.path());
  SandboxSpec background_spec = DockerSpec(image, agent.path());
  background_spec.cpu_priority = CpuPriority::kBackground;
  auto normal = backend->Start(normal_spec);
  REQUIRE(normal);
  auto background = backend->Start(background_spec);
  REQUIRE(background);
  std::string normal_name = docker::ContainerNameFor(normal_spec.session_id);
  std::string background_name = docker::ContainerNameFor(background_spec.session_id);
  auto& cap = cgroup::BackgroundCpuCap::Instance();

  // Issue #38: the same weight from creation on (a low one leaves CFS a debt), and while no
  // foreground call runs, the container's own quota.
  CHECK(Inspect(*backend, background_name)["HostConfig"]["CpuShares"] == 1024);
  CHECK(CpuWeightOf(*backend, background_name) == CpuWeightOf(*backend, normal_name));
  cap.Settle();
  const long own_quota = CpuQuotaOf(*backend, normal_name);
  CHECK(CpuQuotaOf(*backend, background_name) == own_quota);

  // Both spin on CPU 0; a foreground call runs: the background one is capped to a tenth of a
  // CPU (the cap is a bound whatever else runs: at most twice that over the window).
  const std::string spin =
      "python3 -c 'import os\nos.sched_setaffinity(0, {0})\nwhile True: pass' & echo started";
  REQUIRE(ShellRun((*normal)->stream(), spin) == "started\n");
  REQUIRE(ShellRun((*background)->stream(), spin) == "started\n");
  std::optional<cgroup::ForegroundCall> foreground(std::in_place);
  cap.Settle();
  CHECK(CpuQuotaOf(*backend, background_name) < own_quota);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both spinning
  auto [fore, back] = CpuOverEnough(**normal, **background, std::chrono::milliseconds(800), 0.05);
  INFO("over 800 ms on one CPU: normal " << fore << " s, background " << back << " s");
  CHECK(fore > back);
  CHECK(back < 2 * cgroup::kBackgroundCpuShare * 0.8);

  // A claim raises it: its own quota is back when the call returns, and it gets its share.
  REQUIRE((*background)->SetCpuPriority(CpuPriority::kNormal));
  CHECK(CpuQuotaOf(*backend, background_name) == own_quota);
  auto [first, raised] = CpuOverEnough(**normal, **background, std::chrono::milliseconds(800), 0.1);
  INFO("raised: normal " << first << " s, formerly background " << raised << " s");
  CHECK(raised * 3 > first);
  CHECK(first * 3 > raised);

  // And back down (a priority change is not one-way): capped again, lifted with the last call.
  REQUIRE((*background)->SetCpuPriority(CpuPriority::kBackground));
  cap.Settle();
  CHECK(CpuQuotaOf(*backend, background_name) < own_quota);
  foreground.reset();
  cap.Settle();
  CHECK(CpuQuotaOf(*backend, background_name) == own_quota);
  CHECK(Inspect(*backend, background_name)["HostConfig"]["CpuShares"] == 1024);

  // A sandbox destroyed at background priority leaves the cap without an error.
  background->reset();
  CHECK_FALSE(ContainerExists(*backend, background_name));
}

}  // namespace docker_backend_test
