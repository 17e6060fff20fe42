// Unit tests of the small pure pieces of the Docker backend: socket path and URL encoding,
// response heads, daemon errors, owner labels, cgroup discovery, limit reporting.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "runtime/docker/container_cgroup.h"
#include "runtime/docker/docker_limits.h"
#include "runtime/docker/engine_error.h"
#include "runtime/docker/hijacked_connection.h"
#include "runtime/docker/owner.h"
#include "runtime/docker/unix_http.h"

namespace engine_pieces_test {

using namespace sandbox::docker;
using sandbox::ErrorCode;
using sandbox::LimitMechanism;

TEST_CASE("DOCKER_HOST: unix sockets only", "[unit]") {
  CHECK(DockerSocketPath(nullptr).value() == "/var/run/docker.sock");
  CHECK(DockerSocketPath("").value() == "/var/run/docker.sock");
  CHECK(DockerSocketPath("unix:///run/user/1000/docker.sock").value() ==
        "/run/user/1000/docker.sock");
  for (const char* bad : {"tcp://127.0.0.1:2375", "ssh://host", "unix://", "unix://rel/x",
                          "npipe:////./pipe/docker_engine", "/var/run/docker.sock"}) {
    INFO(bad);
    auto path = DockerSocketPath(bad);
    REQUIRE_FALSE(path);
    CHECK(path.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(path.error().message, Catch::Contains("unix://"));
  }
}

TEST_CASE("query values are percent-encoded", "[unit]") {
  CHECK(UrlEncode(R"({"label":["mcp-sandbox.session"]})") ==
        "%7B%22label%22%3A%5B%22mcp-sandbox.session%22%5D%7D");
  CHECK(UrlEncode("a b/c~d_e.f-g") == "a%20b%2Fc~d_e.f-g");
}

TEST_CASE("response heads of the attach upgrade", "[unit]") {
  auto upgraded = ParseResponseHead(
      "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
      "Connection: Upgrade\r\nUpgrade: tcp");
  REQUIRE(upgraded);
  CHECK(upgraded->status == 101);
  CHECK(upgraded->content_length == -1);
  auto error = ParseResponseHead(
      "HTTP/1.1 404 Not Found\r\ncontent-length: 52\r\nContent-Type: application/json");
  REQUIRE(error);
  CHECK(error->status == 404);
  CHECK(error->content_length == 52);
  CHECK_FALSE(ParseResponseHead("SSH-2.0-OpenSSH_9.2"));
  CHECK_FALSE(ParseResponseHead("HTTP/1.1 OK"));
}

TEST_CASE("daemon errors carry the call, status and message", "[unit]") {
  auto missing =
      EngineError("GET /v1.41/images/x/json", 404, R"({"message":"No such image: x:latest"})");
  CHECK(missing.code == ErrorCode::kNotFound);
  CHECK(missing.message ==
        "GET /v1.41/images/x/json: Docker daemon answered 404: No such image: x:latest");
  auto conflict =
      EngineError("create", 409, "{\"message\":\"Conflict. The container name is in use\"}\n");
  CHECK(conflict.code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(conflict.message, Catch::EndsWith("409: Conflict. The container name is in use"));
  auto plain = EngineError("start", 500, "page not found\n");
  CHECK(plain.message == "start: Docker daemon answered 500: page not found");
}

TEST_CASE("a daemon error body nested 100 000 deep is not parsed, only quoted cut", "[unit]") {
  // Daemon answers are JSON from outside like any other: past the depth bound the body is
  // treated as text (its first 300 bytes), never handed to the parser.
  std::string body =
      R"({"message":"x","d":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto error = EngineError("inspect", 500, body);
  CHECK(error.message.size() < 400);
  CHECK_THAT(error.message, Catch::StartsWith("inspect: Docker daemon answered 500: {\"message\""));
}

TEST_CASE("owner labels name a live process or a gone one", "[unit]") {
  const LocalIdentity local = CurrentIdentity();
  std::string me = CurrentOwner();
  CHECK(me.starts_with(local.boot_id + "/" + local.pid_ns + "/" + std::to_string(getpid()) + "/"));
  CHECK(JudgeOwner(local, local.host, me, ProcessRuns).verdict == OwnerVerdict::kAlive);
  const std::string prefix = local.boot_id + "/" + local.pid_ns + "/";
  CHECK(JudgeOwner(local, local.host, prefix + std::to_string(getpid()) + "/1", ProcessRuns)
            .verdict == OwnerVerdict::kGone);  // pid reused
  CHECK(JudgeOwner(local, local.host, prefix + "2147483646/12345", ProcessRuns).verdict ==
        OwnerVerdict::kGone);  // no such pid
  for (const char* bad : {"", "x", "a/b", "a/b/c", "a//1/1", "b/n/1/", "a/b/c/d/e"}) {
    INFO(bad);
    CHECK(JudgeOwner(local, local.host, bad, ProcessRuns).verdict == OwnerVerdict::kGone);
  }
  CHECK(JudgeOwner(local, local.host, prefix + "-1/1", ProcessRuns).verdict == OwnerVerdict::kGone);
  CHECK(StartTimeFromStat("garbage") == "");
}

TEST_CASE("a replica sweeps its own earlier runs' containers, never a live one or a sibling's",
          "[unit]") {
  LocalIdentity local{"mid/host", "boot", "4026531836", ""};
  local.replica = "r2";
  auto alive = [](long pid, std::string_view start) { return pid == 42 && start == "7"; };
  // A restarted swarm slot or pod: the same replica id in another pid namespace or host.
  auto earlier = JudgeOwner(local, "mid/host", "boot/4026532000/42/7", alive, "r2");
  CHECK(earlier.verdict == OwnerVerdict::kGone);
  CHECK_THAT(earlier.why, Catch::Contains("earlier run of replica r2"));
  CHECK(JudgeOwner(local, "mid2/other", "boot/4026531836/42/7", alive, "r2").verdict ==
        OwnerVerdict::kGone);
  // A sibling replica sharing the daemon: left alone, live or not.
  CHECK(JudgeOwner(local, "mid/host", "boot/4026532000/42/7", alive, "r1").verdict ==
        OwnerVerdict::kNotJudged);
  CHECK(JudgeOwner(local, "mid/host", "boot/4026531836/42/7", alive, "r1").verdict ==
        OwnerVerdict::kAlive);
  // Its own live process in this pid namespace: kept.
  CHECK(JudgeOwner(local, "mid/host", "boot/4026531836/42/7", alive, "r2").verdict ==
        OwnerVerdict::kAlive);
  // A server without a replica id takes nothing by label.
  local.replica.clear();
  CHECK(JudgeOwner(local, "mid/host", "boot/4026532000/42/7", alive, "").verdict ==
        OwnerVerdict::kNotJudged);
}

TEST_CASE("the sweep judges only containers of this host and pid namespace", "[unit]") {
  const LocalIdentity local{"mid/host", "boot", "4026531836", ""};
  int asked = 0;
  auto dead = [&asked](long, std::string_view) {
    ++asked;
    return false;
  };
  auto alive = [](long pid, std::string_view start) { return pid == 42 && start == "7"; };
  // Another host sharing the daemon: a dead-looking pid there says nothing about here.
  auto other = JudgeOwner(local, "mid2/host", "boot/4026531836/42/7", dead);
  CHECK(other.verdict == OwnerVerdict::kNotJudged);
  CHECK_THAT(other.why, Catch::Contains("mid2/host"));
  CHECK(JudgeOwner(local, "mid/other-host", "boot/4026531836/42/7", dead).verdict ==
        OwnerVerdict::kNotJudged);
  // Made before host labels existed: not provably ours.
  CHECK(JudgeOwner(local, "", "boot/42/7", dead).verdict == OwnerVerdict::kNotJudged);
  // This host, another pid namespace (a server in another container on this kernel).
  CHECK(JudgeOwner(local, "mid/host", "boot/4026532000/42/7", dead).verdict ==
        OwnerVerdict::kNotJudged);
  CHECK(asked == 0);
  // This host before a reboot: every process of that boot is gone.
  CHECK(JudgeOwner(local, "mid/host", "old-boot/4026532000/42/7", dead).verdict ==
        OwnerVerdict::kGone);
  CHECK(asked == 0);
  // This host, this boot, this pid namespace: the process decides.
  CHECK(JudgeOwner(local, "mid/host", "boot/4026531836/42/7", alive).verdict ==
        OwnerVerdict::kAlive);
  CHECK(JudgeOwner(local, "mid/host", "boot/4026531836/42/8", alive).verdict ==
        OwnerVerdict::kGone);
  CHECK(JudgeOwner(local, "mid/host", "boot/4026531836/42/7", dead).verdict == OwnerVerdict::kGone);
  CHECK(asked == 1);
  // comm may hold spaces and parentheses.
  CHECK(StartTimeFromStat("42 (a b) c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
                          "987654 1000 100 18446744073709551615\n") == "987654");
  CHECK(StartTimeFromStat("garbage") == "");
}

namespace {

constexpr const char* kId = "582cf06de5cff7f8cba720f024958df84e7b3be0b18a697b2ca50e5add8f67b9";

// A v1/hybrid host (this project's CI machine) and a pure v2 host.
constexpr const char* kHybridMountinfo =
    "30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n"
    "34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory\n"
    "35 30 0:31 / /sys/fs/cgroup/pids rw,nosuid shared:15 - cgroup cgroup rw,pids\n"
    "36 30 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:16 - cgroup cgroup rw,cpu,cpuacct\n"
    "40 25 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n";
const std::string kHybridProc = std::string("9:pids:/docker/") + kId + "\n" + "4:memory:/docker/" +
                                kId + "\n" + "2:cpu,cpuacct:/docker/" + kId + "\n" + "0::/docker/" +
                                kId + "\n";

}  // namespace

TEST_CASE("a container's cgroup is found on v1/hybrid and v2 hosts", "[unit]") {
  auto hybrid = ResolveContainerCgroup(kHybridProc, kHybridMountinfo, kId);
  REQUIRE(hybrid);
  CHECK_FALSE(hybrid->v2);
  CHECK(hybrid->memory == std::string("/sys/fs/cgroup/memory/docker/") + kId);
  CHECK(hybrid->pids == std::string("/sys/fs/cgroup/pids/docker/") + kId);
  CHECK(hybrid->cpu == std::string("/sys/fs/cgroup/cpu,cpuacct/docker/") + kId);
  CHECK(hybrid->cpu_control == hybrid->cpu);  // cpu.shares beside cpuacct.usage

  const std::string v2_mountinfo =
      "28 22 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:4 - cgroup2 cgroup2 rw\n";
  const std::string v2_proc = std::string("0::/system.slice/docker-") + kId + ".scope\n";
  auto v2 = ResolveContainerCgroup(v2_proc, v2_mountinfo, kId);
  REQUIRE(v2);
  CHECK(v2->v2);
  CHECK(v2->memory == std::string("/sys/fs/cgroup/system.slice/docker-") + kId + ".scope");
  CHECK(v2->cpu_control == v2->memory);

  // cpu and cpuacct mounted apart (this project's CI machine): cpu.shares is in the cpu one.
  const std::string split_mountinfo =
      "36 30 0:32 / /sys/fs/cgroup/cpu rw,nosuid shared:16 - cgroup cgroup rw,cpu\n"
      "37 30 0:33 / /sys/fs/cgroup/cpuacct rw,nosuid shared:17 - cgroup cgroup rw,cpuacct\n"
      "34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory\n";
  const std::string split_proc = std::string("4:memory:/docker/") + kId + "\n2:cpuacct:/docker/" +
                                 kId + "\n1:cpu:/docker/" + kId + "\n";
  auto split = ResolveContainerCgroup(split_proc, split_mountinfo, kId);
  REQUIRE(split);
  CHECK(split->cpu == std::string("/sys/fs/cgroup/cpuacct/docker/") + kId);
  CHECK(split->cpu_control == std::string("/sys/fs/cgroup/cpu/docker/") + kId);

  // A pid that is no longer the container's (recycled) is not read.
  CHECK_FALSE(ResolveContainerCgroup("0::/user.slice/session-1.scope\n", v2_mountinfo, kId));
  CHECK_FALSE(ResolveContainerCgroup(kHybridProc, kHybridMountinfo, "0000deadbeef"));
  CHECK_FALSE(ResolveContainerCgroup(kHybridProc, kHybridMountinfo, ""));
  CHECK_FALSE(ResolveContainerCgroup("", kHybridMountinfo, kId));
}

TEST_CASE("limits: planned from the daemon, corrected from the container", "[unit]") {
  sandbox::Limits limits;
  limits.memory_bytes = 512ull << 20;
  limits.cpus = 1.0;
  limits.pids = 256;
  DaemonInfo full;
  full.memory_limit = full.swap_limit = full.pids_limit = full.cpu_cfs_quota = true;
  auto plan = PlanDockerLimits(limits, full);
  CHECK(plan.cgroup_mode == "docker");
  REQUIRE(plan.limits.size() == 8);
  for (const auto& limit : plan.limits) {
    INFO(limit.name);
    CHECK(limit.mechanism == LimitMechanism::kDocker);
  }
  CHECK(plan.limits[0].value == "512MiB");

  DaemonInfo no_swap = full;
  no_swap.swap_limit = false;
  auto weaker = PlanDockerLimits(limits, no_swap);
  CHECK(weaker.limits[1].name == "swap");
  CHECK(weaker.limits[1].mechanism == LimitMechanism::kNone);
  CHECK_THAT(weaker.limits[1].note, Catch::Contains("swap"));

  // The daemon dropped MemorySwap (-1) and PidsLimit: reported, never silently weaker.
  nlohmann::json host = {{"Memory", 512ll << 20},
                         {"MemorySwap", -1},
                         {"NanoCpus", 1000000000},
                         {"PidsLimit", nullptr}};
  auto corrected = CorrectFromHostConfig(plan, host);
  CHECK(corrected.limits[0].mechanism == LimitMechanism::kDocker);  // memory
  CHECK(corrected.limits[1].mechanism == LimitMechanism::kNone);    // swap
  CHECK(corrected.limits[2].mechanism == LimitMechanism::kDocker);  // cpu
  CHECK(corrected.limits[3].mechanism == LimitMechanism::kNone);    // pids
  nlohmann::json honoured = {{"Memory", 512ll << 20},
                             {"MemorySwap", 512ll << 20},
                             {"NanoCpus", 1000000000},
                             {"PidsLimit", 256}};
  for (const auto& limit : CorrectFromHostConfig(plan, honoured).limits) {
    CHECK(limit.mechanism == LimitMechanism::kDocker);
  }
}

}  // namespace engine_pieces_test
