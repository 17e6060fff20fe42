// The agent end to end: sandbox-init run directly on the host over a socketpair, with Debian's
// python3, through AgentClient. No namespaces here (except the pid-1 test); isolation is the
// backends' business and their suites run the same agent inside real sandboxes.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/agent/run_limits.h"
#include "runtime/agent/wire.h"
#include "runtime/base/files.h"
#include "tests/support/agent_session.h"
#include "tests/support/local_agent.h"
#include "tests/support/test_support.h"

namespace agent_test {

using namespace std::chrono_literals;
using sandbox::ErrorCode;
using sandbox::RunRequest;
using sandbox::RunResult;
using sandbox::testing::LocalAgent;
using sandbox::testing::LocalAgentOptions;
using sandbox::testing::TempDir;

namespace {

// Cells here are tiny, but this machine is shared with parallel builds: generous timeouts where
// the test is not about timeouts.
constexpr double kRelaxedTimeout = 60;

struct Session : sandbox::testing::AgentSession {
  explicit Session(LocalAgentOptions options = {}) : AgentSession(std::move(options)) {}

  RunResult Python(const std::string& code, double timeout_s = kRelaxedTimeout,
                   const sandbox::OutputCallback& on_output = {}) {
    RunRequest request;
    request.code = code;
    request.timeout_s = timeout_s;
    auto result = agent->client().Run(request, on_output);
    if (!result) FAIL("Run failed: " << result.error().message);
    return *result;
  }

  RunResult Shell(const std::string& command, double timeout_s = kRelaxedTimeout,
                  const std::string& cwd = "") {
    RunRequest request;
    request.kind = RunRequest::Kind::kShell;
    request.code = command;
    request.timeout_s = timeout_s;
    request.cwd = cwd.empty() ? data : cwd;
    auto result = agent->client().Run(request);
    if (!result) FAIL("Run failed: " << result.error().message);
    return *result;
  }

  int WorkerPid() {
    auto result = Python("import os; print(os.getpid())");
    REQUIRE(result.exit_code == 0);
    return std::stoi(result.stdout_text);
  }
};

// Waits until `pid` no longer exists (reaped), up to `timeout`. A zombie still exists.
bool WaitGone(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (sandbox::testing::ProcessState(pid) == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return sandbox::testing::ProcessState(pid) == 0;
}

}  // namespace

TEST_CASE("init says hello once the Python worker is up", "[agent]") {
  Session s;
  const auto& info = s.agent->client().info();
  CHECK(info.protocol == sandbox::agent::kProtocolVersion);
  CHECK(info.init_pid == s.agent->pid());
  CHECK(info.worker_pid > 0);
  CHECK(info.python_version.rfind("3.", 0) == 0);
  CHECK(info.data_dir == s.data);
  CHECK(info.worker_pid == s.WorkerPid());
  // The OOM killer is to prefer the worker over init.
  CHECK(s.Python("open('/proc/self/oom_score_adj').read()").stdout_text == "'500\\n'\n");
}

TEST_CASE("print(1) round trip", "[agent]") {
  Session s;
  auto result = s.Python("print(1)");
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == "1\n");
  CHECK(result.stderr_text.empty());
  CHECK_FALSE(result.timed_out);
  CHECK_FALSE(result.state_lost);
  CHECK(result.artifacts.empty());
  CHECK(result.figures.empty());
}

TEST_CASE("cells share state and show the last expression like a REPL", "[agent]") {
  Session s;
  CHECK(s.Python("x = 41\nimport math").stdout_text.empty());
  CHECK(s.Python("x + 1").stdout_text == "42\n");
  CHECK(s.Python("'a' * 3").stdout_text == "'aaa'\n");
  CHECK(s.Python("None").stdout_text.empty());                  // None is not shown
  CHECK(s.Python("y = x\ny").stdout_text == "41\n");            // only the last statement
  CHECK(s.Python("for i in range(2): i").stdout_text.empty());  // not an expression
  CHECK(s.Python("math.floor(2.5)").stdout_text == "2\n");      // imports persist
  CHECK(s.Python("_").stdout_text == "2\n");                    // like the REPL's _
  CHECK(s.Python("def f(a):\n    return a * 2\nf(21)").stdout_text == "42\n");
  // Cells are in linecache (lazily: the idle worker does not import it) for inspect and pdb.
  CHECK(s.Python("import inspect\nprint(inspect.getsource(f), end='')").stdout_text ==
        "def f(a):\n    return a * 2\n");
  CHECK(s.Python("import pickle\nclass P: pass\nlen(pickle.dumps(P())) > 0").stdout_text ==
        "True\n");  // classes of cells live in a module named __main__
}

TEST_CASE("an exception gives its traceback and exit 1, and the session goes on", "[agent]") {
  Session s;
  auto result = s.Python("def f():\n    raise ValueError('boom')\nf()");
  CHECK(result.exit_code == 1);
  CHECK(result.stdout_text.empty());
  CHECK_THAT(result.stderr_text, Catch::StartsWith("Traceback (most recent call last):"));
  CHECK_THAT(result.stderr_text, Catch::Contains("raise ValueError('boom')"));  // source lines
  CHECK_THAT(result.stderr_text, Catch::EndsWith("ValueError: boom\n"));
  CHECK_THAT(result.stderr_text, !Catch::Contains("worker.py"));  // no frames of the worker

  auto syntax = s.Python("def g(:\n  pass");
  CHECK(syntax.exit_code == 1);
  CHECK_THAT(syntax.stderr_text, Catch::Contains("SyntaxError"));

  int pid = s.WorkerPid();
  CHECK(s.Python("raise SystemExit(3)").exit_code == 3);
  CHECK(s.Python("import sys; sys.exit()").exit_code == 0);
  auto message = s.Python("import sys; sys.exit('bye')");
  CHECK(message.exit_code == 1);
  CHECK(message.stderr_text == "bye\n");
  CHECK(s.WorkerPid() == pid);  // SystemExit does not end the worker

  auto fixed = s.Python("print('fixed')");
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.stdout_text == "fixed\n");
  CHECK_FALSE(fixed.state_lost);
}

TEST_CASE("stdout and stderr are separate, subprocess output is captured too", "[agent]") {
  Session s;
  auto result = s.Python(
      "import sys, os, subprocess\n"
      "print('to out')\n"
      "print('to err', file=sys.stderr)\n"
      "os.system('echo hi; echo oops >&2')\n"
      "subprocess.run(['sh', '-c', 'echo from-subprocess'])\n"
      "os.write(1, b'raw fd write\\n')\n"
      "None");
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == "to out\nhi\nfrom-subprocess\nraw fd write\n");
  CHECK(result.stderr_text == "to err\noops\n");
}

TEST_CASE("output beyond max_output_bytes is dropped and flagged", "[agent]") {
  Session s;
  RunRequest request;
  request.code = "import sys\nprint('a' * 5000)\nsys.stderr.write('e' * 10)\nprint('tail')";
  request.max_output_bytes = 1000;
  auto result = s.agent->client().Run(request);
  REQUIRE(result);
  CHECK(result->exit_code == 0);
  CHECK(result->stdout_text == std::string(1000, 'a'));
  CHECK(result->stdout_truncated);
  CHECK(result->stderr_text == "eeeeeeeeee");
  CHECK_FALSE(result->stderr_truncated);

  // Far more than a pipe buffer: the worker must not block on a full pipe.
  request.code = "import sys\nfor i in range(2000): sys.stdout.write('x' * 1000 + '\\n')\n1";
  request.max_output_bytes = 10;
  result = s.agent->client().Run(request);
  REQUIRE(result);
  CHECK(result->exit_code == 0);
  CHECK(result->stdout_text.size() == 10);
  CHECK(result->stdout_truncated);
}

TEST_CASE("output bytes that are not UTF-8 arrive unchanged", "[agent]") {
  Session s;
  auto result = s.Python(
      "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\x00abc\\x80\\n')\n"
      "sys.stderr.buffer.write(b'\\xc3\\x28')\nNone");
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == std::string("\xff\xfe\0abc\x80\n", 8));
  CHECK(result.stderr_text == "\xc3\x28");
}

TEST_CASE("output streams while the cell runs", "[agent]") {
  Session s;
  std::mutex mutex;
  std::string seen;
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  // A second apart, so even a loaded machine delivers them as separate chunks.
  auto result = s.Python("import time\nfor i in range(3):\n    if i: time.sleep(1)\n    print(i)",
                         kRelaxedTimeout, [&](int stream, std::string_view chunk) {
                           std::lock_guard<std::mutex> lock(mutex);
                           if (stream == 1) seen += chunk;
                           arrivals.push_back(std::chrono::steady_clock::now());
                         });
  CHECK(result.stdout_text == "0\n1\n2\n");
  CHECK(seen == result.stdout_text);  // the callback gets exactly the captured output
  CHECK(arrivals.size() >= 2);        // in pieces, while the cell ran
}

TEST_CASE("a timeout interrupts first: the worker keeps its state", "[agent]") {
  // A long grace, so a loaded machine cannot turn the interrupt into a kill.
  LocalAgentOptions options;
  options.grace_ms = 10000;
  Session s(options);
  int pid = s.WorkerPid();
  REQUIRE(s.Python("x = 5\nimport time").exit_code == 0);
  auto start = std::chrono::steady_clock::now();
  auto result = s.Python("print('before')\ntime.sleep(30)", 1);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(result.timed_out);
  CHECK_FALSE(result.state_lost);
  CHECK_FALSE(result.worker_killed);
  CHECK(result.exit_code == 1);
  CHECK(result.stdout_text == "before\n");
  CHECK_THAT(result.stderr_text, Catch::Contains("KeyboardInterrupt"));
  CHECK(s.Python("x").stdout_text == "5\n");
  CHECK(s.WorkerPid() == pid);
}

TEST_CASE("a timeout kills code that ignores SIGINT, with its children, and restarts", "[agent]") {
  Session s;
  int old_pid = s.WorkerPid();
  // SIGINT ignored from an earlier cell: the dispositions persist, as the state does.
  REQUIRE(s.Python("x = 5\nimport signal, subprocess, time\n"
                   "signal.signal(signal.SIGINT, signal.SIG_IGN)\nNone")
              .exit_code == 0);
  auto start = std::chrono::steady_clock::now();
  auto result = s.Python(
      "child = subprocess.Popen(['sleep', '300'])\n"
      "print(child.pid, flush=True)\n"
      "time.sleep(300)",
      2);
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 2900ms);  // 2 s timeout + 1 s grace
  CHECK(elapsed < 20s);
  CHECK(result.timed_out);
  CHECK(result.state_lost);
  CHECK_FALSE(result.worker_killed);  // killed by the agent, on purpose
  CHECK(result.term_signal == SIGKILL);
  CHECK(result.exit_code == 128 + SIGKILL);
  REQUIRE_FALSE(result.stdout_text.empty());
  pid_t child = std::stoi(result.stdout_text);
  CHECK(WaitGone(old_pid, 5s));
  CHECK(WaitGone(child, 5s));  // the group went, and init reaped the orphan

  auto after = s.Python("print('alive')\n'x' in globals()");
  CHECK(after.exit_code == 0);
  CHECK(after.stdout_text == "alive\nFalse\n");
  CHECK(s.WorkerPid() != old_pid);
}

TEST_CASE("Cancel from another thread stops the run", "[agent]") {
  LocalAgentOptions options;
  options.grace_ms = 10000;  // the interrupt must win even on a loaded machine
  Session s(options);
  REQUIRE(s.Python("x = 7").exit_code == 0);
  std::atomic<bool> cancelled{false};
  std::thread canceller;
  auto on_output = [&](int, std::string_view chunk) {
    if (chunk.find("started") != std::string_view::npos && !cancelled.exchange(true)) {
      canceller = std::thread([&] { s.agent->client().Cancel(); });
    }
  };
  auto start = std::chrono::steady_clock::now();
  auto result = s.Python("import time\nprint('started', flush=True)\ntime.sleep(300)",
                         kRelaxedTimeout, on_output);
  if (canceller.joinable()) canceller.join();
  CHECK(std::chrono::steady_clock::now() - start < 30s);
  CHECK(result.cancelled);
  CHECK_FALSE(result.timed_out);
  CHECK_FALSE(result.state_lost);  // interrupted, not killed
  CHECK(s.Python("x").stdout_text == "7\n");

  // Cancel() with no run in flight does nothing to the next run.
  s.agent->client().Cancel();
  auto next = s.Python("print('next')");
  CHECK(next.stdout_text == "next\n");
  CHECK_FALSE(next.cancelled);
}

TEST_CASE("Cancel kills code that ignores the interrupt", "[agent]") {
  Session s;
  std::atomic<bool> cancelled{false};
  std::thread canceller;
  auto on_output = [&](int, std::string_view chunk) {
    if (chunk.find("started") != std::string_view::npos && !cancelled.exchange(true)) {
      canceller = std::thread([&] { s.agent->client().Cancel(); });
    }
  };
  auto result = s.Python(
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
      "print('started', flush=True)\ntime.sleep(300)",
      kRelaxedTimeout, on_output);
  if (canceller.joinable()) canceller.join();
  CHECK(result.cancelled);
  CHECK(result.state_lost);
  CHECK(result.term_signal == SIGKILL);
  CHECK(s.Python("print(2)").stdout_text == "2\n");
}

TEST_CASE("fresh: true runs in a new process and leaves the session's state alone", "[agent]") {
  Session s;
  REQUIRE(s.Python("y = 1").exit_code == 0);
  int pid = s.WorkerPid();
  RunRequest request;
  request.code = "import os\nprint('y' in globals(), os.getpid())\nz = 2";
  request.fresh = true;
  request.timeout_s = kRelaxedTimeout;
  auto fresh = s.agent->client().Run(request);
  REQUIRE(fresh);
  CHECK(fresh->exit_code == 0);
  CHECK_THAT(fresh->stdout_text, Catch::StartsWith("False "));
  CHECK(std::stoi(fresh->stdout_text.substr(6)) != pid);
  CHECK_FALSE(fresh->state_lost);
  CHECK(s.Python("print(y, 'z' in globals())").stdout_text == "1 False\n");
  CHECK(s.WorkerPid() == pid);

  // A fresh run that times out costs the session nothing either.
  request.code =
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)";
  request.timeout_s = 0.3;
  auto killed = s.agent->client().Run(request);
  REQUIRE(killed);
  CHECK(killed->timed_out);
  CHECK_FALSE(killed->state_lost);
  CHECK(s.Python("y").stdout_text == "1\n");
}

TEST_CASE("open matplotlib figures come back as PNG and are saved as artifacts", "[agent]") {
  if (!sandbox::testing::PythonHasModule("/usr/bin/python3", "matplotlib")) {
    sandbox::testing::SkipTest(
        "/usr/bin/python3 has no matplotlib (apt-get install python3-matplotlib)");
  }
  Session s;
  auto result = s.Python(
      "import matplotlib.pyplot as plt\n"
      "plt.plot([1, 2, 3], [1, 4, 9])\n"
      "fig2 = plt.figure()\n"
      "plt.bar(['a', 'b'], [3, 5])\n"
      "print('drawn')");
  INFO(result.stderr_text);
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == "drawn\n");
  REQUIRE(result.figures.size() == 2);
  for (const auto& figure : result.figures) {
    CHECK(figure.png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
    CHECK(figure.path.rfind(s.data + "/figure_", 0) == 0);
    auto on_disk = sandbox::ReadFile(figure.path);
    REQUIRE(on_disk);
    CHECK(*on_disk == figure.png);
  }
  CHECK(result.figures[0].path != result.figures[1].path);
  REQUIRE(result.artifacts.size() == 2);
  CHECK(result.artifacts[0].mime_type == "image/png");
  CHECK(result.artifacts[0].path == result.figures[0].path);

  // Figures are closed after being returned, and names are not reused.
  auto again = s.Python("import matplotlib.pyplot as plt\nlen(plt.get_fignums())");
  CHECK(again.stdout_text == "0\n");
  CHECK(again.figures.empty());
  auto third = s.Python("plt.plot([0, 1])\nNone");
  REQUIRE(third.figures.size() == 1);
  CHECK(third.figures[0].path != result.figures[0].path);
  CHECK(third.figures[0].path != result.figures[1].path);
}

TEST_CASE("files new or changed under the data dir are reported as artifacts", "[agent]") {
  Session s;
  REQUIRE(s.agent->client().WriteFile("same.txt", "unchanged", true));
  REQUIRE(s.agent->client().WriteFile("edit.csv", "a\n1\n", true));
  auto result = s.Python(
      "import os, json\n"
      "open('edit.csv', 'a').write('2\\n')\n"
      "os.makedirs('out/deep', exist_ok=True)\n"
      "json.dump({'k': 1}, open('out/deep/r.json', 'w'))\n"
      "open('/tmp/not-data', 'w').close() if False else None\n"
      "os.makedirs('__pycache__', exist_ok=True)\n"
      "open('__pycache__/m.pyc', 'w').write('x')");
  CHECK(result.exit_code == 0);
  REQUIRE(result.artifacts.size() == 2);
  CHECK(result.artifacts[0].path == s.data + "/edit.csv");
  CHECK(result.artifacts[0].mime_type == "text/csv");
  CHECK(result.artifacts[0].size == 6);
  CHECK(result.artifacts[0].mtime_ms > 0);
  CHECK(result.artifacts[1].path == s.data + "/out/deep/r.json");
  CHECK(result.artifacts[1].mime_type == "application/json");

  auto shell = s.Shell("echo x > made-by-shell.txt");
  REQUIRE(shell.artifacts.size() == 1);
  CHECK(shell.artifacts[0].path == s.data + "/made-by-shell.txt");
  CHECK(shell.artifacts[0].mime_type == "text/plain");

  CHECK(s.Python("print('nothing')").artifacts.empty());
}

TEST_CASE("a cell that forges the worker's figure list gets a bounded result", "[agent]") {
  // Cell code can rewrite the worker's globals: here its figure list names 5 000 files (each
  // twice). init reads at most kMaxRunFigures of them; before, it sent every one (issue #12).
  Session s;
  auto result = s.Python(
      "import os, sys\n"
      "paths = []\n"
      "for i in range(5000):\n"
      "    p = os.path.join(" +
      ("'" + s.data + "'") +
      ", 'forged_%d.png' % i)\n"
      "    with open(p, 'wb') as f:\n"
      "        f.write(b'\\x89PNG\\r\\n\\x1a\\n' + b'x' * 1000)\n"
      "    paths.append(p)\n"
      "frame = sys._getframe()\n"
      "while frame is not None:\n"
      "    if '_save_figures' in frame.f_globals:\n"
      "        frame.f_globals['_save_figures'] = lambda data_dir: paths + paths\n"
      "    frame = frame.f_back\n");
  CHECK(result.exit_code == 0);
  CHECK(result.stderr_text.empty());
  CHECK(result.figures.size() == sandbox::agent::kMaxRunFigures);
  CHECK(result.artifacts.size() <= sandbox::agent::kMaxRunArtifacts);
  for (const auto& figure : result.figures) CHECK(figure.png.size() == 1008);
  // Distinct paths: the doubled list did not return a file twice.
  CHECK(result.figures.front().path != result.figures.back().path);
}

TEST_CASE("file operations: write, read, stat, list", "[agent]") {
  Session s;
  auto& client = s.agent->client();
  std::string binary("\x00\x01\xff\xfe data", 9);
  REQUIRE(client.WriteFile("in/upload.bin", binary, false));  // relative to the data dir
  auto read = client.ReadFile(s.data + "/in/upload.bin", 1 << 20);
  REQUIRE(read);
  CHECK(*read == binary);
  CHECK(s.Python("open('in/upload.bin', 'rb').read() == "
                 "b'\\x00\\x01\\xff\\xfe data'")
            .stdout_text == "True\n");

  auto exists = client.WriteFile("in/upload.bin", "other", false);
  REQUIRE_FALSE(exists);
  CHECK(exists.error().code == ErrorCode::kFileExists);
  REQUIRE(client.WriteFile("in/upload.bin", "other", true, 0600));
  CHECK(*client.ReadFile("in/upload.bin", 100) == "other");
  struct stat st {};
  REQUIRE(::stat((s.data + "/in/upload.bin").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  auto info = client.Stat("in/upload.bin");
  REQUIRE(info);
  CHECK(info->path == s.data + "/in/upload.bin");
  CHECK(info->size == 5);
  CHECK_FALSE(info->is_dir);
  CHECK(info->mtime_ms > 0);
  auto dir_info = client.Stat("in");
  REQUIRE(dir_info);
  CHECK(dir_info->is_dir);

  REQUIRE(client.WriteFile(s.tmp + "/scratch.txt", "t", false));  // /tmp is writable too
  REQUIRE(client.WriteFile("a/b/c/chart.png", "png", true));
  auto listing = client.ListFiles("", false);
  REQUIRE(listing);
  REQUIRE(listing->size() == 2);
  CHECK((*listing)[0].path == s.data + "/a");
  CHECK((*listing)[0].is_dir);
  CHECK((*listing)[1].path == s.data + "/in");
  auto all = client.ListFiles(s.data, true);
  REQUIRE(all);
  std::vector<std::string> paths;
  for (const auto& entry : *all) paths.push_back(entry.path.substr(s.data.size()));
  CHECK(paths == std::vector<std::string>{"/a", "/a/b", "/a/b/c", "/a/b/c/chart.png", "/in",
                                          "/in/upload.bin"});
  CHECK((*all)[3].mime_type == "image/png");
  CHECK((*all)[3].size == 3);

  auto missing = client.ReadFile("nope.txt", 100);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK(client.Stat("nope").error().code == ErrorCode::kNotFound);
  CHECK(client.ListFiles("nope", false).error().code == ErrorCode::kNotFound);

  REQUIRE(client.WriteFile("big.bin", std::string(10000, 'b'), true));
  auto big = client.ReadFile("big.bin", 9999);
  REQUIRE_FALSE(big);
  CHECK(big.error().code == ErrorCode::kArtifactTooLarge);
  CHECK(client.ReadFile("big.bin", 10000)->size() == 10000);
  CHECK(client.ReadFile("in", 100).error().code == ErrorCode::kInvalidPath);  // a directory
}

TEST_CASE("writes outside the data and tmp dirs are refused, symlinks included", "[agent]") {
  Session s;
  auto& client = s.agent->client();
  TempDir outside;
  std::string victim = outside.Join("victim");
  REQUIRE(sandbox::WriteFile(victim, "original"));

  for (const std::string& path :
       {outside.Join("new"), std::string("../escape"), victim, s.data + "/../x", s.data,
        std::string("/etc/passwd"), std::string("")}) {
    auto written = client.WriteFile(path, "x", true);
    INFO(path);
    REQUIRE_FALSE(written);
    CHECK(written.error().code == ErrorCode::kInvalidPath);
  }
  // A symlinked directory and a symlinked file, both pointing out of the data dir.
  REQUIRE(::symlink(outside.path().c_str(), (s.data + "/link-dir").c_str()) == 0);
  REQUIRE(::symlink(victim.c_str(), (s.data + "/link-file").c_str()) == 0);
  auto through_dir = client.WriteFile("link-dir/new", "x", true);
  REQUIRE_FALSE(through_dir);
  CHECK(through_dir.error().code == ErrorCode::kInvalidPath);
  CHECK(::access(outside.Join("new").c_str(), F_OK) != 0);
  auto through_file = client.WriteFile("link-file", "x", false);
  REQUIRE_FALSE(through_file);
  CHECK(through_file.error().code == ErrorCode::kFileExists);
  // Overwrite replaces the link itself; the file it pointed to is untouched.
  REQUIRE(client.WriteFile("link-file", "replaced", true));
  CHECK(*sandbox::ReadFile(victim) == "original");
  CHECK(*sandbox::ReadFile(s.data + "/link-file") == "replaced");
  // A symlink that stays inside the data dir is fine.
  REQUIRE(sandbox::MakeDirs(s.data + "/real"));
  REQUIRE(::symlink("real", (s.data + "/alias").c_str()) == 0);
  REQUIRE(client.WriteFile("alias/f.txt", "ok", false));
  CHECK(*sandbox::ReadFile(s.data + "/real/f.txt") == "ok");
}

TEST_CASE("shell commands: exit code, output, cwd, timeout kill", "[agent]") {
  Session s;
  auto result = s.Shell("echo out; echo err >&2; pwd; exit 3");
  CHECK(result.exit_code == 3);
  CHECK(result.stdout_text == "out\n" + s.data + "\n");
  CHECK(result.stderr_text == "err\n");

  REQUIRE(sandbox::MakeDirs(s.data + "/sub"));
  CHECK(s.Shell("pwd", kRelaxedTimeout, s.data + "/sub").stdout_text == s.data + "/sub\n");
  RunRequest bad_cwd;
  bad_cwd.kind = RunRequest::Kind::kShell;
  bad_cwd.code = "true";
  bad_cwd.cwd = s.data + "/missing";
  auto refused = s.agent->client().Run(bad_cwd);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kInvalidPath);

  auto terminated = s.Shell("echo start; sleep 300", 2);
  CHECK(terminated.timed_out);
  CHECK(terminated.stdout_text == "start\n");
  CHECK(terminated.term_signal == SIGTERM);
  CHECK(terminated.exit_code == 128 + SIGTERM);

  auto start = std::chrono::steady_clock::now();
  auto stubborn = s.Shell("trap '' TERM; echo $$; while :; do sleep 0.05; done", 2);
  CHECK(std::chrono::steady_clock::now() - start >= 2900ms);
  CHECK(stubborn.timed_out);
  CHECK(stubborn.term_signal == SIGKILL);
  CHECK(WaitGone(std::stoi(stubborn.stdout_text), 5s));

  CHECK(s.Python("print('python still fine')").stdout_text == "python still fine\n");
}

TEST_CASE("a worker killed from outside is reported and replaced", "[agent]") {
  Session s;
  REQUIRE(s.Python("x = 1").exit_code == 0);
  // During a run (as the OOM killer would).
  auto result = s.Python("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(300)",
                         kRelaxedTimeout, [](int stream, std::string_view chunk) {
                           if (stream == 1) ::kill(std::stoi(std::string(chunk)), SIGKILL);
                         });
  CHECK(result.worker_killed);
  CHECK(result.state_lost);
  CHECK(result.term_signal == SIGKILL);
  CHECK_FALSE(result.timed_out);
  CHECK(s.Python("'x' in globals()").stdout_text == "False\n");

  // Between runs: the next run says the state is gone.
  REQUIRE(s.Python("x = 2").exit_code == 0);
  int pid = s.WorkerPid();
  REQUIRE(::kill(pid, SIGKILL) == 0);
  REQUIRE(WaitGone(pid, 5s));
  auto next = s.Python("print('x' in globals())");
  CHECK(next.exit_code == 0);
  CHECK(next.state_lost);
  CHECK(next.stdout_text == "False\n");
  CHECK_FALSE(s.Python("1").state_lost);  // said once

  // A cell that ends the worker process itself.
  auto exited = s.Python("import os\nos._exit(4)");
  CHECK(exited.exit_code == 4);
  CHECK(exited.state_lost);
  CHECK_FALSE(exited.worker_killed);
  CHECK(s.Python("print(3)").stdout_text == "3\n");
}

TEST_CASE("init reaps orphaned processes (as a child subreaper)", "[agent]") {
  Session s;
  auto result = s.Python(
      "import subprocess\n"
      "out = subprocess.run(['sh', '-c', 'sleep 60 >/dev/null 2>&1 & echo $!'], "
      "capture_output=True, text=True)\n"
      "print(out.stdout.strip())");
  REQUIRE(result.exit_code == 0);
  pid_t orphan = std::stoi(result.stdout_text);
  // Reparented to init, not to the host's init...
  auto children = sandbox::testing::ChildrenOf(s.agent->pid());
  CHECK(std::find(children.begin(), children.end(), orphan) != children.end());
  // ...which reaps it when it exits (killed here: it sleeps long so it is seen above).
  REQUIRE(::kill(orphan, SIGKILL) == 0);
  CHECK(WaitGone(orphan, 15s));
}

TEST_CASE("init reaps zombies as pid 1 of a pid namespace", "[agent]") {
  if (::geteuid() != 0) sandbox::testing::SkipTest("needs root for CLONE_NEWPID");
  LocalAgentOptions options;
  options.new_pid_namespace = true;
  Session s(options);
  CHECK(s.agent->client().info().init_pid == 1);
  auto result = s.Python(
      "import subprocess\n"
      "subprocess.run(['sh', '-c', 'sleep 0.3 & sleep 0.3 & true'])\n"
      "import os; os.getppid()");
  REQUIRE(result.exit_code == 0);
  CHECK(result.stdout_text == "1\n");
  // The two orphaned sleeps become children of init (host pid view); once they have exited,
  // only the worker may be left, and nothing may stay a zombie.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  bool zombies = true;
  while (std::chrono::steady_clock::now() < deadline) {
    auto children = sandbox::testing::ChildrenOf(s.agent->pid());
    zombies = children.size() != 1;
    for (pid_t child : children) zombies |= sandbox::testing::ProcessState(child) == 'Z';
    if (!zombies) break;
    std::this_thread::sleep_for(20ms);
  }
  CHECK_FALSE(zombies);
}

TEST_CASE("init ends with its input, and takes its worker along", "[agent]") {
  Session s;
  int worker = s.WorkerPid();
  s.agent->stream().CloseWrite();
  int status = s.agent->WaitExit(10s);
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(WaitGone(worker, 5s));
  auto after = s.agent->client().Run(RunRequest{});
  REQUIRE_FALSE(after);
  CHECK(after.error().code == ErrorCode::kSandboxUnavailable);
}

TEST_CASE("a dead agent makes every call fail with sandbox_unavailable", "[agent]") {
  Session s;
  REQUIRE(::kill(s.agent->pid(), SIGKILL) == 0);
  s.agent->WaitExit(10s);
  auto run = s.agent->client().Run(RunRequest{});
  REQUIRE_FALSE(run);
  CHECK(run.error().code == ErrorCode::kSandboxUnavailable);
  auto stat = s.agent->client().Stat("x");
  REQUIRE_FALSE(stat);
  CHECK(stat.error().code == ErrorCode::kSandboxUnavailable);
}

TEST_CASE("an image without a usable Python fails WaitReady with the reason", "[agent]") {
  TempDir dir;
  LocalAgentOptions options;
  options.data_dir = dir.path();
  options.tmp_dir = dir.path();
  options.python = "/nonexistent/python3";
  auto agent = LocalAgent::Spawn(options);
  REQUIRE(agent);
  auto ready = (*agent)->client().WaitReady(30s);
  REQUIRE_FALSE(ready);
  CHECK(ready.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(ready.error().message, Catch::Contains("/nonexistent/python3"));
  CHECK((*agent)->WaitExit(10s) != -1);

  // A Python that exits at once: the worker's stderr comes back in the message.
  TempDir bin;
  std::string fake = bin.Join("python3");
  REQUIRE(sandbox::WriteFile(fake, "#!/bin/sh\necho 'no such module' >&2\nexit 1\n", 0755));
  options.python = fake;
  auto broken = LocalAgent::Spawn(options);
  REQUIRE(broken);
  auto failed = (*broken)->client().WaitReady(30s);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == ErrorCode::kSandboxUnavailable);
  CHECK_THAT(failed.error().message, Catch::Contains("no such module"));
  CHECK((*broken)->WaitExit(10s) != -1);
}

TEST_CASE("a timeout while a fresh worker is still starting is a timeout, not an error",
          "[agent]") {
  // A Python that takes a second to start, as on a loaded machine.
  TempDir bin;
  std::string slow = bin.Join("python3");
  REQUIRE(sandbox::WriteFile(slow, "#!/bin/sh\nsleep 1\nexec /usr/bin/python3 \"$@\"\n", 0755));
  LocalAgentOptions options;
  options.python = slow;
  Session s(options);
  REQUIRE(s.Python("x = 1").exit_code == 0);
  RunRequest request;
  request.code = "print('never')";
  request.fresh = true;
  request.timeout_s = 0.2;
  auto result = s.agent->client().Run(request);
  REQUIRE(result);
  CHECK(result->timed_out);
  CHECK_FALSE(result->state_lost);
  CHECK(result->stdout_text.empty());
  CHECK(result->term_signal == SIGKILL);
  CHECK(s.Python("x").stdout_text == "1\n");
}

}  // namespace agent_test
