// Starting, failing to start, killing, destroying and sweeping namespace sandboxes: a failure
// names the child's step and errno, and nothing (process, cgroup, record, host id) is left.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/ns/process_identity.h"
#include "runtime/ns/session_record.h"
#include "tests/runtime/ns/ns_test_support.h"

namespace lifecycle_test {

using namespace sandbox;
using namespace sandbox::testing;
using namespace std::chrono_literals;

namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

size_t CountEntries(const std::string& dir) {
  size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") ++n;
  }
  ::closedir(d);
  return n;
}

// Children of this test process (all threads): a failed start must have reaped its child.
std::string OurChildren() {
  std::string children;
  std::string task_dir = "/proc/" + std::to_string(::getpid()) + "/task";
  DIR* dir = ::opendir(task_dir.c_str());
  if (dir == nullptr) return "?";
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    if (auto text = ReadFile(task_dir + "/" + e->d_name + "/children")) children += *text;
  }
  ::closedir(dir);
  return children;
}

bool CgroupLeft(const NamespaceBackend& backend, const std::string& session_id) {
  for (const std::string& parent : backend.cgroups().parent_dirs()) {
    std::string out;
    RunShell("find " + parent + " -maxdepth 3 -name '*" + session_id + "*' 2>/dev/null", &out);
    if (!out.empty()) return true;
  }
  return false;
}

// Nothing of session `id` remains: record, host id claim, cgroup, child process.
void CheckNothingLeft(const TempDir& tmp, const NamespaceBackend& backend, const std::string& id) {
  struct stat st;
  CHECK(::stat((tmp.Join("state") + "/sessions/" + id + ".json").c_str(), &st) != 0);
  CHECK(CountEntries(tmp.Join("state") + "/sessions") == 0);
  CHECK(!CgroupLeft(backend, id));
  if (backend.privileged()) {
    std::string claims;
    RunShell("grep -l " + id + " /run/mcp-sandbox/host-ids/* 2>/dev/null", &claims);
    CHECK(claims.empty());
  }
  CHECK(OurChildren().empty());
}

// How most tests here begin: the test image (or a skip), a namespace backend over a fresh
// state dir, and a spec for one sandbox of that image.
struct StartedBackend {
  std::string rootfs = TestRootfs();
  TempDir tmp;
  std::unique_ptr<TestBackend> backend = MakeBackend(tmp);
  SandboxSpec spec = MakeSpec(rootfs, TestAgentDir());
};

}  // namespace

TEST_CASE_METHOD(StartedBackend, "lifecycle: a program runs to completion in a sandbox",
                 "[sandbox][lifecycle]") {
  spec.env.push_back("GREETING=hello");
  auto out = RunShell(*backend, spec, "echo $GREETING; id -u; id -g; hostname; pwd; echo $$");
  CHECK(out.eof);
  CHECK(out.text == "hello\n1000\n1000\nsandbox\n/mnt/data\n1\n");
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

// A server with hundreds of sessions holds more descriptors than a sandbox may (its
// RLIMIT_NOFILE, 1024 by default); the child starting a sandbox holds a copy of them all until
// it execs, and must still find low slots for its stdio (issue #26: ~5 descriptors a session).
TEST_CASE_METHOD(StartedBackend, "lifecycle: a sandbox starts while the server holds 1100 fds",
                 "[sandbox][lifecycle]") {
  REQUIRE(spec.limits.open_files < 1100);
  struct rlimit files = {};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &files) == 0);
  if (files.rlim_max < 1300) SkipTest("RLIMIT_NOFILE's hard limit is below 1300 here");
  struct rlimit raised = {files.rlim_max, files.rlim_max};
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &raised) == 0);
  std::vector<Fd> held;
  for (int i = 0; i < 1100; ++i) {
    held.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    REQUIRE(held.back());
  }
  auto out = RunShell(*backend, spec, "ls /proc/self/fd | wc -l");
  held.clear();
  (void)::setrlimit(RLIMIT_NOFILE, &files);
  CHECK(out.eof);
  // ls's own: 0-2, and the directory it reads (the 1100 stay with the server).
  CHECK(out.text == "4\n");
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE_METHOD(StartedBackend, "lifecycle: the session record names the running sandbox",
                 "[sandbox][lifecycle]") {
  auto sandbox = backend->StartProgram(spec, {"/bin/sleep", "1000"});
  REQUIRE(sandbox);
  auto& box = static_cast<NamespaceSandbox&>(**sandbox);
  auto text = ReadFile(tmp.Join("state") + "/sessions/" + spec.session_id + ".json");
  REQUIRE(text);
  auto record = ns::RecordFromJson(*text);
  REQUIRE(record);
  CHECK(record->session_id == spec.session_id);
  CHECK(record->init.pid == box.init_pid());
  CHECK(record->init.IsAlive());
  CHECK(record->server.pid == ::getpid());
  CHECK(record->host_uid == box.host_uid());
  CHECK(record->host_uid_claimed == backend->privileged());
  if (!backend->privileged()) CHECK(box.host_uid() == ::geteuid());
  CHECK(!(*sandbox)->enforced_limits().limits.empty());
  CHECK((*sandbox)->backend_name() == "namespace");
  auto usage = (*sandbox)->Usage();
  CHECK(usage.pids >= 1);
  // In its own cgroup (every hierarchy) when the host gives us one.
  if (backend->cgroups().mode() != "none") {
    auto cgroups = ReadFile("/proc/" + std::to_string(box.init_pid()) + "/cgroup");
    REQUIRE(cgroups);
    INFO(*cgroups);
    CHECK(Contains(*cgroups, spec.session_id));
    CHECK((*sandbox)->enforced_limits().cgroup_mode == backend->cgroups().mode());
  }

  // Kill: the stream ends, the process is gone; destruction then removes everything.
  REQUIRE((*sandbox)->Kill());
  REQUIRE((*sandbox)->Kill());  // idempotent
  auto out = ReadToEof(**sandbox, 5s);
  CHECK(out.eof);
  sandbox->reset();
  CHECK(!record->init.IsAlive());
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

// Kill() returns once every process of the sandbox is gone, not when they are only signalled:
// its callers release the session's id right after (live_sandbox_ids.cc). The kill goes to the
// pid namespace's init, whose exit the kernel holds back until the rest of its namespace is
// gone: orphans reparented to init included, and without freezing the cgroup.
TEST_CASE_METHOD(StartedBackend,
                 "lifecycle: Kill returns when every process of the sandbox is gone",
                 "[sandbox][lifecycle]") {
  if (!backend->privileged()) {
    SkipTest("needs root: the sandbox's processes are found by its own host uid");
  }
  auto sandbox = backend->StartProgram(
      spec, {"/bin/sh", "-c", "(sleep 1000 & sleep 1000 &); sleep 1000 & wait"});
  REQUIRE(sandbox);
  auto& box = static_cast<NamespaceSandbox&>(**sandbox);
  // init, two orphans of the subshell (reparented to init) and init's own child
  std::vector<int> pids;
  for (int i = 0; i < 500 && pids.size() != 4; ++i) {
    std::this_thread::sleep_for(10ms);
    pids = HostProcessesOfUid(box.host_uid());
  }
  REQUIRE(pids.size() == 4);
  REQUIRE((*sandbox)->Kill());
  for (int pid : pids) {
    if (pid == box.init_pid()) continue;  // a zombie until its parent, the backend, reaps it
    INFO("pid " << pid);
    CHECK(::kill(pid, 0) != 0);
  }
  sandbox->reset();
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE("lifecycle: a missing rootfs fails before anything is made", "[sandbox][lifecycle]") {
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  auto spec = MakeSpec(tmp.Join("no-such-rootfs"), TestAgentDir());
  auto started = backend->Start(spec);
  REQUIRE(!started);
  INFO(started.error().message);
  CHECK(Contains(started.error().message, "no-such-rootfs"));
  CHECK(Contains(started.error().message, "ENOENT"));
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE("lifecycle: a failing child step is named with its errno and undone",
          "[sandbox][lifecycle]") {
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  // A rootfs without a /proc mount point: the child fails at "mount /proc".
  std::string rootfs = tmp.Join("rootfs");
  for (const char* dir : {"", "/dev", "/tmp", "/mnt/data", "/.sandbox", "/usr/bin"}) {
    REQUIRE(MakeDirs(rootfs + dir));
  }
  ::chmod(tmp.path().c_str(), 0755);
  auto spec = MakeSpec(rootfs, TestAgentDir());
  auto started = backend->Start(spec);
  REQUIRE(!started);
  INFO(started.error().message);
  CHECK(Contains(started.error().message, "mount /proc: ENOENT"));
  CHECK(started.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(started.error().sys_errno == ENOENT);
  CheckNothingLeft(tmp, *backend, spec.session_id);

  // With the mount point there, the next missing piece is the program itself.
  REQUIRE(MakeDirs(rootfs + "/proc"));
  spec.session_id = NewSessionId();
  started = backend->StartProgram(spec, {"/usr/bin/nothing-here"});
  REQUIRE(!started);
  INFO(started.error().message);
  CHECK(Contains(started.error().message, "execve /usr/bin/nothing-here: ENOENT"));
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE("lifecycle: a symlinked mount point in the image is refused", "[sandbox][lifecycle]") {
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  std::string rootfs = tmp.Join("rootfs");
  for (const char* dir : {"", "/proc", "/dev", "/mnt/data", "/.sandbox"}) {
    REQUIRE(MakeDirs(rootfs + dir));
  }
  REQUIRE(::symlink("/etc", (rootfs + "/tmp").c_str()) == 0);
  auto spec = MakeSpec(rootfs, TestAgentDir());
  auto started = backend->Start(spec);
  REQUIRE(!started);
  INFO(started.error().message);
  CHECK(Contains(started.error().message, "/tmp is not a directory"));
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE_METHOD(StartedBackend, "lifecycle: bad session ids and duplicate sessions are refused",
                 "[sandbox][lifecycle]") {
  spec.session_id = "../../etc/x";
  auto bad = backend->Start(spec);
  REQUIRE(!bad);
  CHECK(bad.error().code == ErrorCode::kInvalidSessionId);

  spec.session_id = NewSessionId();
  auto first = backend->StartProgram(spec, {"/bin/sleep", "1000"});
  REQUIRE(first);
  auto second = backend->StartProgram(spec, {"/bin/sleep", "1000"});
  REQUIRE(!second);
  CHECK(second.error().code == ErrorCode::kInvalidSessionId);
  // The refusal leaves the first sandbox's claim alone: a third start is refused too, and the
  // orphan sweep keeps the first (its record stays).
  auto third = backend->StartProgram(spec, {"/bin/sleep", "1000"});
  CHECK(!third);
  REQUIRE(backend->SweepOrphans());
  CHECK(CountEntries(tmp.Join("state") + "/sessions") == 1);
  first->reset();
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE("lifecycle: concurrent starts all succeed with a host id each", "[sandbox][lifecycle]") {
  std::string rootfs = TestRootfs();
  std::string agent = TestAgentDir();
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  constexpr int kCount = 8;
  std::vector<Result<std::unique_ptr<Sandbox>>> results;
  for (int i = 0; i < kCount; ++i) results.emplace_back(Fail(ErrorCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kCount; ++i) {
    threads.emplace_back([&, i] {
      results[i] = backend->StartProgram(MakeSpec(rootfs, agent), {"/bin/sh", "-c", "echo up"});
    });
  }
  for (auto& t : threads) t.join();
  std::set<uid_t> uids;
  for (auto& result : results) {
    INFO((result ? "" : result.error().message));
    REQUIRE(result);
    auto out = ReadToEof(**result, 10s);
    CHECK(out.text == "up\n");
    uids.insert(static_cast<NamespaceSandbox&>(**result).host_uid());
  }
  CHECK(uids.size() == (backend->privileged() ? size_t{kCount} : size_t{1}));
  results.clear();
  CHECK(CountEntries(tmp.Join("state") + "/sessions") == 0);
}

TEST_CASE(
    "lifecycle: the orphan sweep kills what a dead server left and keeps live servers' sandboxes",
    "[sandbox][lifecycle]") {
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  ns::SessionRecords records(tmp.Join("state") + "/sessions");

  // An "orphan": a process standing in for a sandbox init, recorded by a server that is gone
  // (a pid + start time that no longer exist).
  pid_t orphan = ::fork();
  REQUIRE(orphan >= 0);
  if (orphan == 0) {
    ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(50ms);
  auto orphan_id = ns::IdentifyProcess(orphan);
  REQUIRE(orphan_id);
  ns::SessionRecord dead_server;
  dead_server.session_id = NewSessionId();
  dead_server.init = *orphan_id;
  dead_server.server = {::getpid(), orphan_id->start_time + 12345};  // not a live process
  dead_server.host_uid = ::geteuid();
  REQUIRE(records.Write(dead_server));

  // A record whose init is long gone.
  ns::SessionRecord stale = dead_server;
  stale.session_id = NewSessionId();
  stale.init = {orphan, orphan_id->start_time + 1};
  REQUIRE(records.Write(stale));

  // A record of another server that is still running (pid 1 of this pid namespace).
  auto live_server = ns::IdentifyProcess(1);
  REQUIRE(live_server);
  ns::SessionRecord foreign = dead_server;
  foreign.session_id = NewSessionId();
  foreign.server = *live_server;
  REQUIRE(records.Write(foreign));

  // Records written before the spawn (no init yet): another live server's sandbox being
  // started now is kept; a dead server's is removed, with nothing to kill.
  ns::SessionRecord spawning = foreign;
  spawning.session_id = NewSessionId();
  spawning.init = {};
  REQUIRE(records.Write(spawning));
  ns::SessionRecord spawning_dead = dead_server;
  spawning_dead.session_id = NewSessionId();
  spawning_dead.init = {};
  REQUIRE(records.Write(spawning_dead));

  auto swept = backend->SweepOrphans();
  REQUIRE(swept);
  CHECK(*swept == 3);
  int status = 0;
  REQUIRE(::waitpid(orphan, &status, 0) == orphan);  // it was SIGKILLed
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  std::set<std::string> left;
  for (const auto& record : records.ReadAll()) left.insert(record.session_id);
  CHECK(left == std::set<std::string>{foreign.session_id, spawning.session_id});
  records.Remove(foreign.session_id);
  records.Remove(spawning.session_id);
}

TEST_CASE_METHOD(StartedBackend, "lifecycle: a live sandbox survives the sweep of its own backend",
                 "[sandbox][lifecycle]") {
  auto sandbox = backend->StartProgram(spec, {"/bin/sleep", "1000"});
  REQUIRE(sandbox);
  pid_t pid = static_cast<NamespaceSandbox&>(**sandbox).init_pid();
  auto swept = backend->SweepOrphans();
  REQUIRE(swept);
  CHECK(*swept == 0);
  CHECK(ns::IdentifyProcess(pid).has_value());
  sandbox->reset();
  CheckNothingLeft(tmp, *backend, spec.session_id);
}

TEST_CASE("lifecycle: after a server crash the sandbox dies and the sweep removes its traces",
          "[sandbox][lifecycle]") {
  std::string rootfs = TestRootfs();
  std::string agent = TestAgentDir();
  TempDir tmp;
  std::string owner = "mcp-sandbox-test-crash-" + std::to_string(::getpid());
  int pipefd[2];
  REQUIRE(::pipe2(pipefd, O_CLOEXEC) == 0);
  // The "server": a child process that starts a sandbox, reports it, and is then SIGKILLed.
  pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    ::close(pipefd[0]);
    auto backend = MakeBackend(tmp, owner);
    auto spec = MakeSpec(rootfs, agent);
    auto sandbox = backend->StartProgram(spec, {"/bin/sleep", "1000"});
    if (!sandbox) ::_exit(1);
    auto& box = static_cast<NamespaceSandbox&>(**sandbox);
    auto init = ns::IdentifyProcess(box.init_pid());
    if (!init) ::_exit(1);
    std::string line =
        init->ToString() + " " + std::to_string(box.host_uid()) + " " + spec.session_id + "\n";
    (void)!::write(pipefd[1], line.data(), line.size());
    ::pause();
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char buf[256] = {};
  ssize_t n = ::read(pipefd[0], buf, sizeof buf - 1);
  ::close(pipefd[0]);
  REQUIRE(n > 0);
  std::istringstream in(buf);
  ns::ProcessIdentity init;
  unsigned host_uid = 0;
  std::string session_id;
  in >> init.pid >> init.start_time >> host_uid >> session_id;
  REQUIRE(init.IsAlive());

  ::kill(server, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(server, &status, 0) == server);

  // PR_SET_PDEATHSIG: the sandbox dies with the server's spawner thread.
  auto deadline = Clock::now() + 5s;
  while (init.IsAlive() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK(!init.IsAlive());
  // Its record (and host id claim, and cgroup) are still there for the sweep.
  struct stat st;
  std::string record = tmp.Join("state") + "/sessions/" + session_id + ".json";
  REQUIRE(::stat(record.c_str(), &st) == 0);

  auto backend = MakeBackend(tmp, owner);
  auto swept = backend->SweepOrphans();
  REQUIRE(swept);
  CHECK(*swept == 1);
  CheckNothingLeft(tmp, *backend, session_id);
  if (backend->privileged()) CHECK(HostProcessesOfUid(host_uid).empty());
}

TEST_CASE("lifecycle: the code paths for kernels before 5.12 build the same sandbox",
          "[sandbox][lifecycle]") {
  std::string rootfs = TestRootfs();
  TempDir tmp;
  NamespaceBackend::Options options;
  options.state_dir = tmp.Join("state");
  options.agent_dir = TestAgentDir();
  options.old_kernel_paths = true;  // remount with the locked flags, walk /proc/self/fd
  TestBackend backend(options,
                      CgroupManager::Detect("mcp-sandbox-test-" + std::to_string(::getpid())));
  int leak = ::open("/dev/null", O_RDONLY);  // NOLINT(android-cloexec-open): on purpose
  REQUIRE(leak >= 0);
  auto out = RunShell(backend, MakeSpec(rootfs, TestAgentDir()),
                      "awk '{print $5, $6}' /proc/self/mountinfo; ls /proc/self/fd | tr '\\n' ' '; "
                      "touch /x; touch /mnt/data/y && echo data-ok");
  ::close(leak);
  INFO(out.text);
  CHECK(out.eof);
  out.text = "\n" + out.text;
  CHECK(Contains(out.text, "\n/ ro,nosuid,nodev"));
  CHECK(Contains(out.text, "\n/.sandbox ro,nosuid,nodev"));
  CHECK(Contains(out.text, "\n/proc/sys ro,nosuid,nodev,noexec"));
  CHECK(Contains(out.text, "\n/dev ro,nosuid,noexec"));
  CHECK(Contains(out.text, "\n0 1 2 3 "));
  CHECK(!Contains(out.text, " 4 "));
  CHECK(Contains(out.text, "Read-only file system"));
  CHECK(Contains(out.text, "data-ok"));
}

TEST_CASE("lifecycle: the sandbox's stderr is drained into the debug log", "[sandbox][lifecycle]") {
  std::string rootfs = TestRootfs();
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("ns-test", sink);
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
  auto spec = MakeSpec(rootfs, TestAgentDir());
  // Far more than the drain logs (64 KiB): it must keep reading without logging all of it,
  // or the sandbox would block on a full pipe.
  auto sandbox = backend->StartProgram(
      spec, {"/bin/sh", "-c",
             "echo to-stderr-1 >&2; head -c 1000000 /dev/zero | tr '\\0' x >&2; echo >&2; "
             "echo to-stdout"});
  REQUIRE(sandbox);
  auto out = ReadToEof(**sandbox, 20s);
  CHECK(out.eof);
  CHECK(out.text == "to-stdout\n");
  auto logged = [&] {
    std::string all;
    for (const auto& line : sink->last_formatted()) all += line;
    return all;
  };
  auto deadline = Clock::now() + 5s;
  while (!Contains(logged(), "(further output not logged)") && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  spdlog::set_default_logger(previous);
  std::string all = logged();
  CHECK(Contains(all, "[" + spec.session_id + "] to-stderr-1"));
  CHECK(Contains(all, "(further output not logged)"));
  CHECK(all.size() < 200000);
}

}  // namespace lifecycle_test
