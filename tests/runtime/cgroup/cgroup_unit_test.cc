// Pure tests of the limits room: parsers, the plan per mode, rlimits, the backend choice and the
// Docker probe against a stand-in daemon on a local socket. No privileges, no forks.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <string_view>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/base/fd.h"
#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/cgroup/fallback_hint.h"
#include "runtime/cgroup/limits_plan.h"
#include "runtime/cgroup/systemd_scope.h"
#include "runtime/probe/host_probe.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/support/test_support.h"

namespace sandbox::cgroup_unit_test {
namespace {

// A string_view, not a const std::string&: g++ 14 warns that a reference returned from a call
// with a temporary std::string argument may dangle (-Wdangling-reference), though it points into
// plan.
const EnforcedLimit& Find(const EnforcedLimits& plan, std::string_view name) {
  auto it = std::find_if(plan.limits.begin(), plan.limits.end(),
                         [&](const EnforcedLimit& l) { return l.name == name; });
  REQUIRE(it != plan.limits.end());
  return *it;
}

TEST_CASE("mountinfo parsing finds v1 controllers and the v2 mount", "[unit]") {
  const std::string mountinfo =
      "25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
      "33 25 0:28 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "34 33 0:29 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
      "35 33 0:30 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
      "38 33 0:33 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "39 33 0:34 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "40 33 0:35 / /mnt/with\\040space rw - cgroup cgroup rw,pids\n";
  auto mounts = cgroup::ParseCgroupMounts(mountinfo);
  REQUIRE(mounts.size() == 5);
  CHECK(mounts[0].v2);
  CHECK(mounts[0].mount_point == "/sys/fs/cgroup/unified");
  CHECK(mounts[1].controllers.empty());  // name=systemd is no controller
  CHECK(mounts[2].controllers == std::vector<std::string>{"cpu", "cpuacct"});
  CHECK(mounts[3].root == "/docker/abc");
  CHECK(mounts[3].controllers == std::vector<std::string>{"memory"});
  CHECK(mounts[4].mount_point == "/mnt/with space");
}

TEST_CASE("/proc/self/cgroup parsing", "[unit]") {
  auto entries = cgroup::ParseProcCgroup(
      "12:pids:/user.slice\n4:memory:/process_api/x\n1:name=systemd:/\n0::/user.slice/a.scope\n");
  REQUIRE(entries.size() == 4);
  CHECK(entries[1].controllers == std::vector<std::string>{"memory"});
  CHECK(entries[1].path == "/process_api/x");
  CHECK(cgroup::V2PathOf(entries) == "/user.slice/a.scope");
  CHECK_FALSE(cgroup::V2PathOf(cgroup::ParseProcCgroup("4:memory:/\n")).has_value());
}

TEST_CASE("keyed control files", "[unit]") {
  const std::string events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n";
  CHECK(cgroup::FindKeyedValue(events, "oom_kill") == 2);
  CHECK(cgroup::FindKeyedValue(events, "oom") == 3);
  CHECK_FALSE(cgroup::FindKeyedValue(events, "missing").has_value());
  CHECK(cgroup::FindKeyedValue("oom_kill_disable 0\nunder_oom 0\noom_kill 7", "oom_kill") == 7);
}

TEST_CASE("session ids become safe group names", "[unit]") {
  CHECK(cgroup::GroupNameFor("sess_0123456789ab").value() == "sess_0123456789ab");
  CHECK(cgroup::GroupNameFor("0123456789ab").value() == "sess_0123456789ab");
  for (const char* bad : {"", "..", "../x", "a/b", ".hidden", "a b", "x\n"}) {
    auto name = cgroup::GroupNameFor(bad);
    REQUIRE_FALSE(name.has_value());
    CHECK(name.error().code == ErrorCode::kInvalidSessionId);
  }
  // The longest session id (a 63-character replica id) names a group; one more character does not.
  const std::string longest = "sess_" + std::string(63, 'r') + "_" + std::string(32, 'a');
  CHECK(cgroup::GroupNameFor(longest).value() == longest);
  CHECK_FALSE(cgroup::GroupNameFor(longest + "a").has_value());
}

TEST_CASE("cpu quota against a 100 ms period", "[unit]") {
  CHECK(cgroup::CpuQuotaMicros(1.0) == 100000);
  CHECK(cgroup::CpuQuotaMicros(0.5) == 50000);
  CHECK(cgroup::CpuQuotaMicros(2.25) == 225000);
  CHECK(cgroup::CpuQuotaMicros(0.001) == 1000);  // the kernel's minimum
  CHECK(cgroup::CpuText(1.0) == "1.0 cpu");
  CHECK(cgroup::CpuText(0.25) == "0.25 cpu");
}

TEST_CASE("the plan names the mechanism of every limit", "[unit]") {
  Limits limits;
  cgroup::CgroupCapabilities v2;
  v2.mechanism = LimitMechanism::kCgroup2;
  v2.memory = v2.swap = v2.cpu = v2.pids = true;
  EnforcedLimits plan = cgroup::BuildPlan("cgroup2", limits, v2);
  CHECK(plan.cgroup_mode == "cgroup2");
  for (const char* name : {"memory", "swap", "cpu", "pids"}) {
    CHECK(Find(plan, name).mechanism == LimitMechanism::kCgroup2);
  }
  CHECK(Find(plan, "memory").value == "512MiB");
  CHECK(Find(plan, "swap").value == "0");
  CHECK(Find(plan, "cpu").value == "1.0 cpu");
  CHECK(Find(plan, "pids").value == "256");
  CHECK(Find(plan, "disk").mechanism == LimitMechanism::kTmpfsSize);
  CHECK(Find(plan, "disk").note.find("count as the session's memory") != std::string::npos);
  CHECK(Find(plan, "open_files").mechanism == LimitMechanism::kRlimit);
  CHECK(Find(plan, "file_size").mechanism == LimitMechanism::kRlimit);

  cgroup::CgroupCapabilities none;  // rlimits only
  none.swap_note = "no memory cgroup";
  EnforcedLimits weak = cgroup::BuildPlan("none", limits, none);
  CHECK(weak.cgroup_mode == "none");
  CHECK(Find(weak, "memory").mechanism == LimitMechanism::kRlimit);
  CHECK(Find(weak, "memory").note.find("RLIMIT_AS") != std::string::npos);
  CHECK(Find(weak, "cpu").mechanism == LimitMechanism::kNone);
  CHECK_FALSE(Find(weak, "cpu").note.empty());
  CHECK(Find(weak, "swap").mechanism == LimitMechanism::kNone);
  CHECK(Find(weak, "swap").note == "no memory cgroup");
  // Every weaker-than-cgroup entry says why.
  for (const auto& limit : weak.limits) {
    if (limit.mechanism == LimitMechanism::kNone) CHECK_FALSE(limit.note.empty());
  }
  const EnforcedLimit& pids = Find(weak, "pids");
  CHECK(pids.mechanism ==
        (NprocRlimitIsPerSandbox() ? LimitMechanism::kRlimit : LimitMechanism::kNone));
}

TEST_CASE("rlimits: core off, sizes, AS only without a memory cgroup", "[unit]") {
  Limits limits;
  auto find = [](const std::vector<RlimitSetting>& all, int resource) -> const RlimitSetting* {
    for (const auto& setting : all) {
      if (setting.resource == resource) return &setting;
    }
    return nullptr;
  };
  auto with_cgroup = RlimitsFor(limits, true);
  REQUIRE(find(with_cgroup, RLIMIT_CORE) != nullptr);
  CHECK(find(with_cgroup, RLIMIT_CORE)->hard == 0);
  CHECK(find(with_cgroup, RLIMIT_FSIZE)->soft == limits.file_size_bytes);
  CHECK(find(with_cgroup, RLIMIT_NOFILE)->hard == limits.open_files);
  CHECK(find(with_cgroup, RLIMIT_AS) == nullptr);
  auto without = RlimitsFor(limits, false);
  REQUIRE(find(without, RLIMIT_AS) != nullptr);
  CHECK(find(without, RLIMIT_AS)->soft == limits.memory_bytes);
  CHECK((find(without, RLIMIT_NPROC) != nullptr) == NprocRlimitIsPerSandbox());
  if (const RlimitSetting* nproc = find(without, RLIMIT_NPROC)) CHECK(nproc->hard == limits.pids);
}

TEST_CASE("backend choice follows SANDBOX_BACKEND and the probes", "[unit]") {
  probe::UsernsProbe userns_ok;
  userns_ok.ok = true;
  probe::UsernsProbe userns_bad;
  userns_bad.detail = "write /proc/self/uid_map failed: EPERM";
  probe::SeccompProbe seccomp_ok;
  seccomp_ok.ok = true;
  probe::DockerProbe docker_ok;
  docker_ok.reachable = docker_ok.api_ok = true;
  docker_ok.detail = "Engine API 1.43 at /var/run/docker.sock";
  probe::DockerProbe docker_none;
  docker_none.detail = "connect: ENOENT";

  CHECK(probe::ChooseBackend(userns_ok, seccomp_ok, docker_none, "auto").backend == "namespace");
  auto fallback = probe::ChooseBackend(userns_bad, seccomp_ok, docker_ok, "auto");
  CHECK(fallback.backend == "docker");
  CHECK(fallback.reason.find("uid_map") != std::string::npos);
  auto nothing = probe::ChooseBackend(userns_bad, seccomp_ok, docker_none, "auto");
  CHECK(nothing.backend == "none");
  CHECK(nothing.reason.find("ENOENT") != std::string::npos);
  CHECK(probe::ChooseBackend(userns_ok, seccomp_ok, docker_ok, "docker").backend == "docker");
  CHECK(probe::ChooseBackend(userns_ok, seccomp_ok, docker_none, "docker").backend == "none");
  CHECK(probe::ChooseBackend(userns_bad, seccomp_ok, docker_ok, "namespace").backend == "none");
  probe::SeccompProbe seccomp_bad;
  CHECK(probe::ChooseBackend(userns_ok, seccomp_bad, docker_none, "auto").backend == "none");
  auto bad = probe::ChooseBackend(userns_ok, seccomp_ok, docker_ok, "podman");
  CHECK(bad.backend == "none");
  CHECK(bad.reason.find("SANDBOX_BACKEND") != std::string::npos);
  // gvisor: only when named, never by auto, and a missing runsc is the reason.
  probe::GvisorProbe gvisor_ok{.ok = true, .detail = "/usr/bin/runsc, platform ptrace"};
  probe::GvisorProbe gvisor_bad{.ok = false, .detail = "no 'runsc' in PATH"};
  CHECK(probe::ChooseBackend(userns_ok, seccomp_ok, docker_ok, "gvisor", gvisor_ok).backend ==
        "gvisor");
  CHECK(probe::ChooseBackend(userns_bad, seccomp_ok, docker_none, "auto", gvisor_ok).backend ==
        "none");
  auto no_runsc = probe::ChooseBackend(userns_ok, seccomp_ok, docker_ok, "gvisor", gvisor_bad);
  CHECK(no_runsc.backend == "none");
  CHECK(no_runsc.reason == "SANDBOX_BACKEND=gvisor, but no 'runsc' in PATH");
}

// A stand-in for dockerd on a unix socket, for daemons this machine cannot run (too old, or
// broken): answers /_ping with `api_version` (or `ping_status`), /version and /info, one request
// per connection.
class FakeDaemon {
 public:
  FakeDaemon(const std::string& path, std::string api_version, int ping_status = 200,
             std::string min_api_version = "1.24")
      : api_version_(std::move(api_version)),
        ping_status_(ping_status),
        min_api_version_(std::move(min_api_version)) {
    listener_.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener_.get(), 8) == 0);
    thread_ = std::thread([this] {
      for (;;) {
        Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;  // the listener was shut down
        std::string request;
        char buf[1024];
        while (request.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = ::read(conn.get(), buf, sizeof buf);
          if (n <= 0) break;
          request.append(buf, static_cast<size_t>(n));
        }
        std::string answer = Answer(request.substr(0, request.find("\r\n")));
        // MSG_NOSIGNAL: a client that gave up and closed must not SIGPIPE the test.
        (void)::send(conn.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~FakeDaemon() {
    ::shutdown(listener_.get(), SHUT_RDWR);  // wakes the accept()
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::string Answer(const std::string& request_line) const {
    auto reply = [](int status, const std::string& headers, const std::string& body) {
      return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + headers +
             "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
             body;
    };
    if (request_line.find("/_ping ") != std::string::npos) {
      return reply(ping_status_, "Api-Version: " + api_version_ + "\r\nOstype: linux\r\n", "OK");
    }
    if (request_line.find("/version ") != std::string::npos) {
      return reply(200, "",
                   R"({"Version":"fake","ApiVersion":")" + api_version_ + R"(","MinAPIVersion":")" +
                       min_api_version_ + R"("})");
    }
    if (request_line.find("/info ") != std::string::npos) {
      return reply(200, "", R"({"CgroupVersion":"1"})");
    }
    return reply(404, "", R"({"message":"not here"})");
  }

  Fd listener_;
  std::string api_version_;
  int ping_status_;
  std::string min_api_version_;
  std::thread thread_;
};

TEST_CASE("Docker probe: the backend's own verdict on a daemon", "[unit]") {
  testing::TempDir dir;
  std::string path = dir.Join("docker.sock");
  SECTION("a recent daemon") {
    FakeDaemon daemon(path, "1.43");
    auto probe = probe::PingDockerSocket(path, 2000);
    INFO(probe.detail);
    CHECK(probe.reachable);
    CHECK(probe.api_ok);
    CHECK(probe.api_version == "1.43");
    CHECK(probe.endpoint == path);
  }
  SECTION("an old daemon answers but is refused, as the backend refuses it") {
    FakeDaemon daemon(path, "1.40");
    auto probe = probe::PingDockerSocket(path, 2000);
    CHECK(probe.reachable);
    CHECK_FALSE(probe.api_ok);
    CHECK(probe.api_version == "1.40");
    CHECK(probe.detail.find("1.41") != std::string::npos);
  }
  SECTION("a daemon whose minimum is above what we speak is refused too") {
    FakeDaemon daemon(path, "1.60", 200, "1.55");
    auto probe = probe::PingDockerSocket(path, 2000);
    CHECK(probe.reachable);
    CHECK_FALSE(probe.api_ok);
    CHECK(probe.detail.find("1.55") != std::string::npos);
  }
  SECTION("an error answer") {
    FakeDaemon daemon(path, "1.43", 500);
    auto probe = probe::PingDockerSocket(path, 2000);
    CHECK_FALSE(probe.reachable);
    CHECK(probe.detail.find("500") != std::string::npos);
  }
  SECTION("no socket") {
    auto probe = probe::PingDockerSocket(dir.Join("missing.sock"), 2000);
    CHECK_FALSE(probe.reachable);
    CHECK(probe.detail.find("no such socket") != std::string::npos);
  }
}

TEST_CASE("Docker probe: DOCKER_HOST other than unix:// is refused with the reason", "[unit]") {
  testing::ScopedEnv host("DOCKER_HOST", "tcp://10.0.0.1:2375");
  auto probe = probe::ProbeDocker();
  CHECK_FALSE(probe.reachable);
  CHECK(probe.endpoint == "tcp://10.0.0.1:2375");
  CHECK(probe.detail.find("unix") != std::string::npos);
}

TEST_CASE("the rlimits-only fallback names the one command that gives real limits", "[unit]") {
  using cgroup::FallbackHint;
  // With a user manager: ask it for a delegated scope.
  std::string with_manager = FallbackHint({.root = false, .cgroup2 = true, .user_manager = true});
  CHECK(with_manager.find("systemd-run --user --scope -p Delegate=yes") != std::string::npos);
  // Over SSH without linger there is none to ask: linger starts one.
  std::string without = FallbackHint({.root = false, .cgroup2 = true, .user_manager = false});
  CHECK(without.find("loginctl enable-linger") != std::string::npos);
  // Root needs no delegation; systemd delegates nothing to users on cgroup v1.
  CHECK(FallbackHint({.root = true, .cgroup2 = true, .user_manager = true}).empty());
  CHECK(FallbackHint({.root = false, .cgroup2 = false, .user_manager = true}).empty());
}

TEST_CASE("systemd scopes are named after the cgroup owner and the server's pid", "[unit]") {
  using cgroup::IsScopeOf;
  CHECK(cgroup::ScopeNameFor("mcp-sandbox", 4242) == "mcp-sandbox-4242.scope");
  CHECK(IsScopeOf("mcp-sandbox", "mcp-sandbox-4242.scope"));
  // Another state dir's servers (owner "mcp-sandbox-<hash>") are not ours to sweep, and their
  // scopes must not look like ours, nor ours like theirs.
  const std::string other = CgroupOwnerFor("/home/u/state");
  CHECK_FALSE(IsScopeOf("mcp-sandbox", cgroup::ScopeNameFor(other, 4242)));
  CHECK(IsScopeOf(other, cgroup::ScopeNameFor(other, 4242)));
  CHECK_FALSE(IsScopeOf(other, "mcp-sandbox-4242.scope"));
  CHECK_FALSE(IsScopeOf("mcp-sandbox", "mcp-sandbox-.scope"));
  CHECK_FALSE(IsScopeOf("mcp-sandbox", "mcp-sandbox-42.service"));
  CHECK_FALSE(IsScopeOf("mcp-sandbox", "mcp-sandbox-4x2.scope"));
}

TEST_CASE("without a user bus the scope request fails saying what is missing", "[unit]") {
  {
    testing::ScopedEnv address("DBUS_SESSION_BUS_ADDRESS", std::nullopt);
    testing::ScopedEnv runtime("XDG_RUNTIME_DIR", std::nullopt);
    auto scope = cgroup::MoveIntoDelegatedScope("mcp-sandbox");
    REQUIRE_FALSE(scope);
    CHECK(scope.error().message.find("no user bus") != std::string::npos);
  }
  {
    testing::ScopedEnv address("DBUS_SESSION_BUS_ADDRESS", std::nullopt);
    testing::ScopedEnv runtime("XDG_RUNTIME_DIR", "/nonexistent");
    auto scope = cgroup::MoveIntoDelegatedScope("mcp-sandbox");
    REQUIRE_FALSE(scope);
    CHECK(scope.error().message.find("/nonexistent/bus") != std::string::npos);
  }
}

TEST_CASE("a control file's number: the whole text, a trailing newline left out", "[unit]") {
  CHECK(cgroup::ParseControlNumber<long>("-1\n") == -1L);
  CHECK(cgroup::ParseControlNumber<long>("100000") == 100000L);
  CHECK(cgroup::ParseControlNumber<uint64_t>("8589934592 \n") == uint64_t{8589934592});
  CHECK_FALSE(cgroup::ParseControlNumber<uint64_t>("-1"));
  CHECK_FALSE(cgroup::ParseControlNumber<long>("max"));
  CHECK_FALSE(cgroup::ParseControlNumber<long>("12 34"));
  CHECK_FALSE(cgroup::ParseControlNumber<long>(""));
  CHECK_FALSE(cgroup::ParseControlNumber<int>(" 7"));
}

TEST_CASE("the background CPU cap: each group's part and cpu.max text", "[unit]") {
  using cgroup::CappedQuotaMicros;
  // A tenth of a CPU in all, split among the background groups, at least 1 ms per period.
  CHECK(CappedQuotaMicros(1, -1, 100000) == 10000);
  CHECK(CappedQuotaMicros(2, 100000, 100000) == 5000);
  CHECK(CappedQuotaMicros(50, -1, 100000) == 1000);
  CHECK(CappedQuotaMicros(0, -1, 100000) == 10000);
  // Never above the group's own quota.
  CHECK(CappedQuotaMicros(1, 4000, 100000) == 4000);
  CHECK(CappedQuotaMicros(1, -1, 10000) == 1000);
  CHECK(cgroup::ParseCpuMax("max 100000\n") == std::pair<long, long>{-1, 100000});
  CHECK(cgroup::ParseCpuMax("50000 100000") == std::pair<long, long>{50000, 100000});
  CHECK_FALSE(cgroup::ParseCpuMax("50000"));
  CHECK_FALSE(cgroup::ParseCpuMax("x 100000"));
  CHECK_FALSE(cgroup::ParseCpuMax("max 0"));
}

// Whether a thread of this process is blocked in openat(2) (a writer opening a FIFO that has no
// reader yet), from /proc/self/task/*/syscall ("257 ..." on x86-64).
bool AThreadBlocksInOpen() {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    auto syscall = cgroup::ReadControl(task.path().string() + "/syscall");
    if (syscall && syscall->rfind("257 ", 0) == 0) return true;
  }
  return false;
}

TEST_CASE("the background CPU cap: a raise waits for no other group's quota write", "[unit]") {
  // The cap thread once held one lock over its whole sweep of the background groups, so a raise
  // (a group leaving) waited for every write to the others: 3-4 ms while 50 were lifted. Here
  // another group's cpu.max is a FIFO with no reader: the cap thread's write to it blocks until
  // the test reads it, and the raise of the first group must not wait for that.
  testing::TempDir dir;
  std::string raised = dir.Join("raised"), stuck = dir.Join("stuck");
  for (const auto& group : {raised, stuck}) {
    REQUIRE(::mkdir(group.c_str(), 0755) == 0);
    Fd made(::open((group + "/cpu.max").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(made);
    REQUIRE(cgroup::WriteControl(group + "/cpu.max", "max 100000").has_value());
  }
  cgroup::BackgroundCpuCap cap;
  auto raised_group = cgroup::BackgroundCpuGroup::Join(raised, /*v2=*/true, cap);
  auto stuck_group = cgroup::BackgroundCpuGroup::Join(stuck, /*v2=*/true, cap);
  REQUIRE(raised_group.has_value());
  REQUIRE(stuck_group.has_value());
  cap.Settle();
  std::string fifo = stuck + "/cpu.max";
  REQUIRE(::unlink(fifo.c_str()) == 0);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  cap.ForegroundBegins();  // the cap thread caps both: the write to the FIFO blocks in its open
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!AThreadBlocksInOpen() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(AThreadBlocksInOpen());
  auto raise = std::async(std::launch::async, [&] { raised_group->reset(); });
  bool prompt = raise.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  // Let the cap thread go on: read what it writes (the cap, one of two groups' part; then,
  // raised already, one group's part: the next sweep may have written it too).
  Fd reader(::open(fifo.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(reader);
  char buffer[64] = {};
  ssize_t n = ::read(reader.get(), buffer, sizeof buffer - 1);
  raise.wait();
  CHECK(prompt);
  CHECK(std::string_view(buffer, n > 0 ? static_cast<size_t>(n) : 0).substr(0, 11) ==
        "5000 100000");
  cap.Settle();
  // The raised group has its own quota, whether the sweep capped it before the raise or not (a
  // plain file, unlike cgroupfs, keeps the tail of a longer earlier write: "5000 100000").
  CHECK(cgroup::ReadControl(raised + "/cpu.max").value_or("").substr(0, 10) == "max 100000");
  // The stuck group gets its quota back into a plain file again.
  reader.Reset();
  REQUIRE(::unlink(fifo.c_str()) == 0);
  Fd plain(::open(fifo.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(plain);
  stuck_group->reset();
  CHECK(cgroup::ReadControl(fifo).value_or("") == "max 100000");
  cap.ForegroundEnds();
}

TEST_CASE("the background CPU cap: a group that joins while a call runs is capped too", "[unit]") {
  // A pooled sandbox started (or a cold session lowered) during a call joins a cap that is on
  // already: it is capped as one more member, and the others' parts shrink to make room.
  testing::TempDir dir;
  auto make_group = [&](const std::string& name) {
    std::string group = dir.Join(name);
    REQUIRE(::mkdir(group.c_str(), 0755) == 0);
    Fd made(::open((group + "/cpu.max").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(made);
    REQUIRE(cgroup::WriteControl(group + "/cpu.max", "max 100000").has_value());
    return group;
  };
  // The quota written last: a plain file, unlike cgroupfs, keeps the tail of a longer earlier
  // write, so only the text before the first space is read.
  auto quota = [](const std::string& group) {
    std::string text = cgroup::ReadControl(group + "/cpu.max").value_or("");
    return text.substr(0, text.find(' '));
  };
  std::string early = make_group("early"), late = make_group("late");
  cgroup::BackgroundCpuCap cap;
  auto early_group = cgroup::BackgroundCpuGroup::Join(early, /*v2=*/true, cap);
  REQUIRE(early_group.has_value());
  cap.ForegroundBegins();
  cap.Settle();
  CHECK(quota(early) == "10000");  // one member: the whole tenth of a CPU
  auto late_group = cgroup::BackgroundCpuGroup::Join(late, /*v2=*/true, cap);
  REQUIRE(late_group.has_value());
  cap.Settle();
  CHECK(quota(late) == "5000");
  CHECK(quota(early) == "5000");
  cap.ForegroundEnds();
}

TEST_CASE("the background CPU cap: a raise from under the cap makes the group heavier a moment",
          "[unit]") {
  // On EEVDF a group throttled by the cap comes back with the negative lag it was throttled with
  // and waits for the others to run it back (background_cpu.h): ten times heavier, it earns it
  // back sooner. The weight goes back after the boost's time, at once if the group is lowered
  // again before then, and a group raised while not capped (no throttle, no lag) is not boosted.
  testing::TempDir dir;
  std::string group = dir.Join("raised"), weight = group + "/cpu.weight";
  REQUIRE(::mkdir(group.c_str(), 0755) == 0);
  for (const auto& [file, text] : {std::pair{group + "/cpu.max", "max 100000"}, {weight, "100"}}) {
    Fd made(::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(made);
    REQUIRE(cgroup::WriteControl(file, text).has_value());
  }
  // A plain file, unlike cgroupfs, keeps the tail of a longer earlier write: emptied before
  // each write looked for.
  auto empty = [&] { REQUIRE(::truncate(weight.c_str(), 0) == 0); };
  auto weight_within = [&](std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::string text;
    while ((text = cgroup::ReadControl(weight).value_or("")).empty() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return text;
  };
  cgroup::BackgroundCpuCap cap(cgroup::BackgroundCpuCap::kLiftDelay,
                               std::chrono::milliseconds(300));

  auto uncapped = cgroup::BackgroundCpuGroup::Join(group, /*v2=*/true, cap);
  REQUIRE(uncapped.has_value());
  cap.Settle();
  uncapped->reset();
  CHECK(cgroup::ReadControl(weight).value_or("") == "100");  // no call ran: not boosted

  cap.ForegroundBegins();
  auto lowered = cgroup::BackgroundCpuGroup::Join(group, /*v2=*/true, cap);
  REQUIRE(lowered.has_value());
  cap.Settle();
  lowered->reset();  // the raise
  CHECK(cgroup::ReadControl(weight).value_or("") == "1000");
  empty();
  CHECK(weight_within(std::chrono::seconds(5)) == "100");

  auto again = cgroup::BackgroundCpuGroup::Join(group, /*v2=*/true, cap);
  REQUIRE(again.has_value());
  cap.Settle();
  again->reset();
  empty();
  auto relowered = cgroup::BackgroundCpuGroup::Join(group, /*v2=*/true, cap);
  REQUIRE(relowered.has_value());
  CHECK(cgroup::ReadControl(weight).value_or("") == "100");  // its own weight back at once
  empty();
  cap.Settle();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the boost's time
  CHECK(cgroup::ReadControl(weight).value_or("") == "");        // nothing left to restore
  relowered->reset();
  CHECK(cgroup::ReadControl(weight).value_or("") == "1000");
  cap.ForegroundEnds();
}

}  // namespace
}  // namespace sandbox::cgroup_unit_test
