// The real agent (sandbox-init + worker.py from the build) inside Docker sandboxes, through
// AgentClient over the attach stream, unchanged. Needs root, a daemon and an image with python3.
#include <csignal>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/agent/host/agent_client.h"
#include "runtime/agent/host/agent_dir.h"
#include "runtime/docker/container_spec.h"
#include "tests/runtime/docker/docker_fixture.h"

namespace agent_over_docker_test {

using namespace sandbox;
using namespace sandbox::testing;
using namespace std::chrono_literals;

namespace {

// A started sandbox with its AgentClient ready.
struct AgentSandbox {
  explicit AgentSandbox(Limits limits = {}) {
    backend = ConnectDockerOrSkip();
    std::string image = DockerTestImageOrSkip(*backend);
    auto agent_dir = FindAgentDir();
    if (!agent_dir) SkipTest("agent not built: " + agent_dir.error().message);
    spec = DockerSpec(image, *agent_dir);
    spec.limits = limits;
    auto started = backend->Start(spec);
    if (!started) FAIL("start: " << started.error().message);
    sandbox = std::move(*started);
    client = std::make_unique<AgentClient>(sandbox->stream());
    auto ready = client->WaitReady(60s);
    if (!ready) FAIL("agent hello: " << ready.error().message);
  }

  RunResult Run(RunRequest::Kind kind, const std::string& code, double timeout_s = 60) {
    RunRequest request;
    request.kind = kind;
    request.code = code;
    request.timeout_s = timeout_s;
    auto result = client->Run(request);
    if (!result) FAIL("run: " << result.error().message);
    return *result;
  }
  RunResult Python(const std::string& code, double timeout_s = 60) {
    return Run(RunRequest::Kind::kPython, code, timeout_s);
  }

  // The container's processes' command lines, from GET /containers/{id}/top.
  std::vector<std::string> Processes() {
    auto top = backend->engine().ContainerTop(docker::ContainerNameFor(spec.session_id));
    REQUIRE(top);
    std::vector<std::string> commands;
    for (auto& row : *top) commands.push_back(row["COMMAND"]);
    return commands;
  }

  std::unique_ptr<docker::DockerBackend> backend;
  SandboxSpec spec;
  std::unique_ptr<Sandbox> sandbox;
  std::unique_ptr<AgentClient> client;
};

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// Only the agent and its idle Python worker.
bool OnlyIdleProcesses(const std::vector<std::string>& commands) {
  // The agent's init is pid 1 of the container (no docker-init), its worker the only child.
  if (commands.size() != 2) return false;
  int agent = 0, worker = 0;
  for (const auto& command : commands) {
    if (command.find("/.sandbox/sandbox-init") != std::string::npos)
      ++agent;
    else if (command.find("worker.py") != std::string::npos)
      ++worker;
  }
  return agent == 1 && worker == 1;
}

// What a killed run leaves goes away within a few seconds (the agent reaps and restarts its
// worker): waits up to 5 s for only the idle processes, then checks.
void CheckOnlyIdleProcessesSoon(AgentSandbox& s) {
  std::vector<std::string> processes;
  for (int i = 0; i < 50; ++i) {
    processes = s.Processes();
    if (OnlyIdleProcesses(processes)) break;
    std::this_thread::sleep_for(100ms);
  }
  INFO(Joined(processes));
  CHECK(OnlyIdleProcesses(processes));
}

}  // namespace

TEST_CASE("docker agent: hello, print(1), state, files", "[docker]") {
  AgentSandbox s;
  auto one = s.Python("print(1)");
  CHECK(one.exit_code == 0);
  CHECK(one.stdout_text == "1\n");
  REQUIRE(s.Python("x = 41").exit_code == 0);
  CHECK(s.Python("print(x + 1)").stdout_text == "42\n");
  auto failing = s.Python("1/0");
  CHECK(failing.exit_code == 1);
  CHECK_THAT(failing.stderr_text, Catch::Contains("ZeroDivisionError"));
  auto shell = s.Run(RunRequest::Kind::kShell, "id -u; pwd; echo err >&2; exit 3");
  CHECK(shell.exit_code == 3);
  CHECK(shell.stdout_text == "1000\n/mnt/data\n");
  CHECK(shell.stderr_text == "err\n");

  REQUIRE(s.client->WriteFile("/mnt/data/in.txt", "hello docker", false));
  CHECK(s.client->WriteFile("/mnt/data/in.txt", "again", false).error().code ==
        ErrorCode::kFileExists);
  CHECK(s.Python("print(open('/mnt/data/in.txt').read())").stdout_text == "hello docker\n");
  auto made = s.Python("open('/mnt/data/out.csv', 'w').write('a,b\\n1,2\\n')");
  REQUIRE(made.artifacts.size() == 1);
  CHECK(made.artifacts[0].path == "/mnt/data/out.csv");
  CHECK(s.client->ReadFile("/mnt/data/out.csv", 1 << 20).value() == "a,b\n1,2\n");
  CHECK(s.client->WriteFile("/etc/evil", "x", true).error().code == ErrorCode::kInvalidPath);
  CHECK(OnlyIdleProcesses(s.Processes()));
}

TEST_CASE("docker agent: a timeout kills the run's whole process group", "[docker]") {
  AgentSandbox s;
  REQUIRE(s.Python("x = 5").exit_code == 0);
  // Code that ignores the interrupt and leaves children: only a process-group kill ends it.
  auto start = Clock::now();
  auto result = s.Python(
      "import signal, subprocess, time\n"
      "children = [subprocess.Popen(['sleep', '300']) for _ in range(3)]\n"
      "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
      "print('started', flush=True)\n"
      "time.sleep(300)",
      0.5);
  CHECK(Clock::now() - start < 20s);
  CHECK(result.timed_out);
  CHECK(result.state_lost);
  CHECK(result.term_signal == SIGKILL);
  CHECK(result.stdout_text == "started\n");

  // Nothing of the run is left: the agent and a fresh idle worker only.
  CheckOnlyIdleProcessesSoon(s);
  auto after = s.Python("print('x' in globals())");
  CHECK(after.stdout_text == "False\n");

  // The same for a shell command with background jobs.
  auto shell = s.Run(RunRequest::Kind::kShell, "sleep 300 & sleep 300 & sleep 300", 0.5);
  CHECK(shell.timed_out);
  CheckOnlyIdleProcessesSoon(s);
}

TEST_CASE("docker agent: a worker killed by the memory limit is seen as an OOM kill", "[docker]") {
  Limits limits;
  limits.memory_bytes = 128ull << 20;
  AgentSandbox s(limits);
  uint64_t before = s.sandbox->Usage().oom_kills;
  auto result = s.Python("b = bytearray(512 << 20)\nb[::4096] = b'x' * len(b[::4096])");
  CHECK(result.worker_killed);
  CHECK(result.state_lost);
  CHECK(s.sandbox->Usage().oom_kills > before);  // what SessionManager checks, right after
  CHECK(s.Python("print('back')").stdout_text == "back\n");
}

}  // namespace agent_over_docker_test
