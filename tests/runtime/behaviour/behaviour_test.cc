// Runtime behaviour users rely on, held against every backend (see behaviour_fixture.h).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string_view>
#include <thread>

#include "tests/runtime/behaviour/behaviour_fixture.h"

namespace behaviour_test {

using sandbox::ErrorCode;
using sandbox::RunRequest;

BEHAVIOUR_TEST("a session runs Python and keeps state between calls", "") {
  auto id = fixture.NewSession();
  auto first = fixture.Python(id, "x = 41\nprint('hello')");
  CHECK(first.exit_code == 0);
  CHECK(first.stdout_text == "hello\n");
  auto second = fixture.Python(id, "x + 1");
  CHECK(second.stdout_text.find("42") != std::string::npos);
}

BEHAVIOUR_TEST("an exception returns the traceback and the next cell still sees the state", "") {
  auto id = fixture.NewSession();
  fixture.Python(id, "data = [1, 2, 3]");
  auto failing = fixture.Python(id, "1 / 0");
  CHECK(failing.exit_code != 0);
  CHECK(failing.stderr_text.find("ZeroDivisionError") != std::string::npos);
  auto fixed = fixture.Python(id, "print(sum(data))");
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.stdout_text == "6\n");
}

BEHAVIOUR_TEST("stdout and stderr are captured separately, including subprocess output", "") {
  auto id = fixture.NewSession();
  auto run = fixture.Python(id,
                            "import sys, subprocess\nprint('out')\nprint('err', file=sys.stderr)\n"
                            "subprocess.run(['sh', '-c', 'echo child'])");
  CHECK(run.stdout_text.find("out\n") != std::string::npos);
  CHECK(run.stdout_text.find("child\n") != std::string::npos);
  CHECK(run.stderr_text == "err\n");
}

BEHAVIOUR_TEST("a timeout kills the run, reports lost state, and the session stays usable", "") {
  auto id = fixture.NewSession();
  fixture.Python(id, "keep = 1");
  RunRequest request;
  request.code =
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)";
  request.timeout_s = 1;
  auto started = std::chrono::steady_clock::now();
  auto run = fixture.manager().Run(id, request);
  REQUIRE(run);
  CHECK(run->timed_out);
  CHECK(run->state_lost);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(15));
  auto after = fixture.Python(id, "print('alive')");
  CHECK(after.stdout_text == "alive\n");
  auto lost = fixture.Python(id, "print('keep' in globals())");
  CHECK(lost.stdout_text == "False\n");
}

BEHAVIOUR_TEST("an interruptible timeout keeps the state", "") {
  auto id = fixture.NewSession();
  fixture.Python(id, "keep = 7");
  RunRequest request;
  request.code = "import time\ntime.sleep(60)";
  request.timeout_s = 1;
  auto run = fixture.manager().Run(id, request);
  REQUIRE(run);
  CHECK(run->timed_out);
  CHECK_FALSE(run->state_lost);
  CHECK(fixture.Python(id, "print(keep)").stdout_text == "7\n");
}

// How many `sleep 312` processes the sandbox has, counted from inside once the count has
// settled: a process SIGKILLed as its run stopped still has to be scheduled to exit, which on a
// loaded machine can come after the next cell starts (a zombie has no cmdline, so it counts 0).
constexpr const char* kCountSleepers =
    "import os, time\n"
    "def count():\n"
    "    n = 0\n"
    "    for pid in filter(str.isdigit, os.listdir('/proc')):\n"
    "        try:\n"
    "            n += open(f'/proc/{pid}/cmdline', 'rb').read().startswith(b'sleep\\x00312')\n"
    "        except OSError:\n"
    "            pass\n"
    "    return n\n"
    "deadline = time.monotonic() + 10\n"
    "while count() and time.monotonic() < deadline:\n"
    "    time.sleep(0.02)\n"
    "print(count())";

BEHAVIOUR_TEST("a stopped run leaves nothing running: its background children go too", "") {
  auto id = fixture.NewSession();
  fixture.Python(id, "keep = 3");
  RunRequest python;
  python.code = "import subprocess, time\nsubprocess.Popen(['sleep', '312'])\ntime.sleep(60)";
  python.timeout_s = 1;
  auto interrupted = fixture.manager().Run(id, python);
  REQUIRE(interrupted);
  CHECK(interrupted->timed_out);
  CHECK_FALSE(interrupted->state_lost);  // the worker survived the interrupt ...
  CHECK(fixture.Python(id, kCountSleepers).stdout_text == "0\n");  // ... its child did not
  CHECK(fixture.Python(id, "print(keep)").stdout_text == "3\n");

  RunRequest shell;
  shell.kind = RunRequest::Kind::kShell;
  // The shell dies of the interrupt's SIGTERM; its background child ignores it.
  shell.code = "sh -c \"trap '' TERM; exec sleep 312\" & sleep 60";
  shell.timeout_s = 1;
  auto stopped = fixture.manager().Run(id, shell);
  REQUIRE(stopped);
  CHECK(stopped->timed_out);
  CHECK(fixture.Python(id, kCountSleepers).stdout_text == "0\n");
}

BEHAVIOUR_TEST("files go in and out of /mnt/data and new files are reported as artifacts", "") {
  auto id = fixture.NewSession();
  REQUIRE(fixture.manager().WriteFile(id, "data.csv", "a,b\n1,2\n3,4\n", false));
  auto exists = fixture.manager().WriteFile(id, "data.csv", "x", false);
  REQUIRE_FALSE(exists);
  CHECK(exists.error().code == ErrorCode::kFileExists);
  auto run = fixture.Python(id,
                            "rows = open('/mnt/data/data.csv').read().splitlines()\n"
                            "open('/mnt/data/out.txt', 'w').write(str(len(rows)))");
  CHECK(run.exit_code == 0);
  bool reported = false;
  for (const auto& artifact : run.artifacts) reported |= artifact.path == "/mnt/data/out.txt";
  CHECK(reported);
  auto content = fixture.manager().ReadFile(id, "/mnt/data/out.txt", 1 << 20);
  REQUIRE(content);
  CHECK(*content == "3");
  auto listing = fixture.manager().ListFiles(id, "/mnt/data", false);
  REQUIRE(listing);
  CHECK(listing->size() >= 2);
}

BEHAVIOUR_TEST("files at the size limits go in and out, and the session still answers", "") {
  auto id = fixture.NewSession();
  // At the upload limit (SANDBOX_MAX_UPLOAD_BYTES, 50 MiB by default), and a file above what
  // one agent frame held in base64 (~72 MB), read back as the 256 MiB download cap allows.
  std::string upload(fixture.manager().config().max_upload_bytes, '\0');
  for (size_t i = 0; i < upload.size(); ++i) upload[i] = static_cast<char>(i * 31 % 251);
  REQUIRE(fixture.manager().WriteFile(id, "upload.bin", upload, false));
  auto check =
      fixture.Python(id,
                     "d = open('/mnt/data/upload.bin', 'rb').read()\n"
                     "p = bytes(i * 31 % 251 for i in range(251))\n"
                     "print(len(d), d == (p * (len(d) // 251 + 1))[:len(d)])\n"
                     "del d, p\n"
                     "n = open('/mnt/data/big.bin', 'wb').write(bytes(range(256)) * 312500)");
  CHECK(check.stdout_text == std::to_string(upload.size()) + " True\n");
  auto big = fixture.manager().ReadFile(id, "/mnt/data/big.bin", uint64_t{256} << 20);
  REQUIRE(big);
  REQUIRE(big->size() == 80'000'000);
  bool pattern = true;
  for (size_t i = 0; i < big->size() && pattern; i += 4093) {
    pattern = static_cast<unsigned char>((*big)[i]) == i % 256;
  }
  CHECK(pattern);
  auto refused = fixture.manager().ReadFile(id, "/mnt/data/big.bin", 1 << 20);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kArtifactTooLarge);
  CHECK(fixture.Python(id, "print(6 * 7)").stdout_text == "42\n");
}

BEHAVIOUR_TEST("writes outside /mnt/data and /tmp are refused", "") {
  auto id = fixture.NewSession();
  auto refused = fixture.manager().WriteFile(id, "/etc/evil", "x", true);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kInvalidPath);
  auto escaped = fixture.manager().WriteFile(id, "../../etc/evil", "x", true);
  REQUIRE_FALSE(escaped);
  CHECK(escaped.error().code == ErrorCode::kInvalidPath);
}

BEHAVIOUR_TEST("a second call while one runs gets session_busy", "") {
  auto id = fixture.NewSession();
  // The slow run says when it is under way, then runs until it is cancelled.
  std::mutex mutex;
  std::condition_variable started_cv;
  bool started = false;
  sandbox::CancelToken cancel;
  sandbox::Result<sandbox::RunResult> slow_run;  // checked on this thread after the join
  std::thread slow([&] {
    std::string seen;
    RunRequest request;
    request.code = "import time\nprint('started', flush=True)\ntime.sleep(60)";
    request.timeout_s = 30;
    slow_run = fixture.manager().Run(
        id, request,
        [&](int, std::string_view chunk) {
          seen += chunk;
          if (seen.find("started") == std::string::npos) return;
          std::lock_guard<std::mutex> lock(mutex);
          started = true;
          started_cv.notify_all();
        },
        &cancel);
    // The run also ends this wait if it failed before printing.
    std::lock_guard<std::mutex> lock(mutex);
    started = true;
    started_cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    started_cv.wait_for(lock, std::chrono::seconds(60), [&] { return started; });
  }
  RunRequest request;
  request.code = "print(1)";
  auto busy = fixture.manager().Run(id, request);
  cancel.Cancel();
  slow.join();
  REQUIRE(slow_run);
  CHECK(slow_run->stdout_text.find("started") != std::string::npos);
  CHECK(slow_run->cancelled);
  REQUIRE_FALSE(busy);
  CHECK(busy.error().code == ErrorCode::kSessionBusy);
}

BEHAVIOUR_TEST("cancellation stops a run", "") {
  auto id = fixture.NewSession();
  sandbox::CancelToken cancel;
  // Cancelled from another thread once the cell has begun (it says so), not after a guess at
  // the start-up time.
  std::thread canceller;
  std::string seen;
  auto on_output = [&](int, std::string_view chunk) {
    seen += chunk;
    if (seen.find("started") != std::string::npos && !canceller.joinable()) {
      canceller = std::thread([&] { cancel.Cancel(); });
    }
  };
  RunRequest request;
  request.code = "import time\nprint('started', flush=True)\ntime.sleep(30)";
  request.timeout_s = 30;
  auto started = std::chrono::steady_clock::now();
  auto run = fixture.manager().Run(id, request, on_output, &cancel);
  if (canceller.joinable()) canceller.join();
  REQUIRE(run);
  CHECK(run->cancelled);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(fixture.Python(id, "print(2)").stdout_text == "2\n");
}

BEHAVIOUR_TEST("allocating past the memory limit is reported as oom and the session recovers", "") {
  sandbox::SessionOptions options;
  options.memory_bytes = 128ull << 20;
  auto id = fixture.NewSession(options);
  auto run =
      fixture.Python(id, "b = bytearray(400 * 1024 * 1024)\nb[::4096] = b'x' * len(b[::4096])");
  CHECK(run.exit_code != 0);
  CHECK((run.oom || run.worker_killed || run.stderr_text.find("MemoryError") != std::string::npos));
  CHECK(fixture.Python(id, "print('ok')").stdout_text == "ok\n");
}

BEHAVIOUR_TEST("the session cap is enforced and closing frees a slot", "") {
  fixture.Reconfigure([](sandbox::SessionConfig& config) { config.max_sessions = 2; });
  auto a = fixture.NewSession();
  fixture.NewSession();
  auto third = fixture.manager().Create({});
  REQUIRE_FALSE(third);
  CHECK(third.error().code == ErrorCode::kMaxSessions);
  REQUIRE(fixture.manager().Close(a));
  auto gone = fixture.manager().Get(a);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == ErrorCode::kSessionNotFound);
  CHECK(fixture.manager().Create({}));
}

BEHAVIOUR_TEST("idle sessions expire after the TTL", "") {
  fixture.Reconfigure([](sandbox::SessionConfig& config) { config.ttl = std::chrono::minutes(0); });
  auto id = fixture.NewSession();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(fixture.manager().ExpireIdle() == 1);
  CHECK_FALSE(fixture.manager().Get(id));
}

BEHAVIOUR_TEST("per-session limits above the configured maximum are refused", "") {
  sandbox::SessionOptions options;
  options.memory_bytes = fixture.manager().config().limits.memory_bytes * 2;
  auto created = fixture.manager().Create(options);
  REQUIRE_FALSE(created);
  CHECK(created.error().code == ErrorCode::kInvalidArgument);
}

BEHAVIOUR_TEST("the limits in force are reported per session", "") {
  auto id = fixture.NewSession();
  auto info = fixture.manager().Get(id);
  REQUIRE(info);
  CHECK_FALSE(info->enforced.cgroup_mode.empty());
  bool has_memory = false;
  for (const auto& limit : info->enforced.limits) has_memory |= limit.name == "memory";
  CHECK(has_memory);
}

BEHAVIOUR_TEST("shell commands run in the session with their exit code", "") {
  auto id = fixture.NewSession();
  RunRequest request;
  request.kind = RunRequest::Kind::kShell;
  request.code = "echo hi; id -u; exit 3";
  auto run = fixture.manager().Run(id, request);
  REQUIRE(run);
  CHECK(run->exit_code == 3);
  CHECK(run->stdout_text == "hi\n1000\n");
}

BEHAVIOUR_TEST("matplotlib figures come back as PNG and are saved as artifacts", "[image]") {
  auto id = fixture.NewSession();
  auto run = fixture.Python(id, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])");
  REQUIRE(run.exit_code == 0);
  REQUIRE(run.figures.size() == 1);
  CHECK(run.figures[0].png.substr(1, 3) == "PNG");
  bool saved = false;
  for (const auto& artifact : run.artifacts) saved |= artifact.path == run.figures[0].path;
  CHECK(saved);
}

BEHAVIOUR_TEST("pandas analyses an uploaded CSV", "[image]") {
  auto id = fixture.NewSession();
  REQUIRE(fixture.manager().WriteFile(id, "sales.csv",
                                      "region,amount\nnorth,10\nsouth,32\nnorth,5\n", false));
  auto run = fixture.Python(id,
                            "import pandas as pd\ndf = pd.read_csv('/mnt/data/sales.csv')\n"
                            "print(df.groupby('region').amount.sum().to_dict())");
  CHECK(run.exit_code == 0);
  CHECK(run.stdout_text == "{'north': 15, 'south': 32}\n");
}

// Hostile cells (issue #12 item 10): what ends a cell must not end the session.

BEHAVIOUR_TEST("kill(-1, SIGKILL) from a cell does not end the session", "") {
  auto id = fixture.NewSession();
  // kill(-1) reaches every process the sandbox user may signal except the caller and the pid
  // namespace's init: a child here, and the agent's init if it is not that pid 1.
  auto run = fixture.Python(id, R"(
import os, subprocess
child = subprocess.Popen(['sleep', '300'])
os.kill(-1, 9)
print('child', child.wait())
)");
  INFO(run.exit_code << " " << run.stdout_text << run.stderr_text);
  CHECK(run.exit_code == 0);
  CHECK(run.stdout_text == "child -9\n");
  auto after = fixture.Python(id, "print('alive')");
  CHECK(after.exit_code == 0);
  CHECK(after.stdout_text == "alive\n");
}

BEHAVIOUR_TEST("TIOCSTI and TIOCSETD on the sandbox's own terminal are refused", "") {
  auto id = fixture.NewSession();
  // A pty of the sandbox made its controlling terminal (setsid, then open the slave): there the
  // kernel itself lets TIOCSTI through, so only the seccomp policy can refuse it.
  auto run = fixture.Python(id, R"(
import os, fcntl, struct, termios
m, s = os.openpty()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    tty = os.open(os.ttyname(s), os.O_RDWR)
    out = []
    for name, request, arg in (('tiocsti', termios.TIOCSTI, b'x'),
                               ('tiocsetd', termios.TIOCSETD, struct.pack('i', 0))):
        try:
            fcntl.ioctl(tty, request, arg); out.append(name + ' OK')
        except OSError as e:
            out.append(name + ' ' + os.strerror(e.errno))
    out.append('tcgetattr %d' % len(termios.tcgetattr(tty)))
    os.write(w, '\n'.join(out).encode() + b'\n')
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print(os.read(r, 4096).decode(), end='')
)");
  INFO(run.stdout_text << run.stderr_text);
  CHECK(run.exit_code == 0);
  CHECK(run.stdout_text ==
        "tiocsti Operation not permitted\ntiocsetd Operation not permitted\ntcgetattr 7\n");
}

BEHAVIOUR_TEST("a /tmp flood of small files ends in an error, not in a dead session", "") {
  fixture.GvisorDiffers(
      "gVisor's tmpfs has no inode cap; the inodes grow the Sentry until the host cgroup kills the "
      "whole sandbox");
  auto id = fixture.NewSession();
  fixture.Python(id, "keep = 1");
  sandbox::RunRequest request;
  request.code = R"(
import os, errno
n, err = 0, None
try:
    for n in range(300000):
        # Empty files: no data pages, so the size= cap alone never stops them; only the inode
        # count (nr_inodes=) or memory does.
        os.close(os.open(f'/tmp/f{n}', os.O_CREAT | os.O_WRONLY, 0o644))
    n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print('files', n, 'error', err)
)";
  request.timeout_s = 60;
  auto run = fixture.manager().Run(id, request);
  REQUIRE(run);
  INFO(run->stdout_text << run->stderr_text);
  // Either the flood fits, or it stops at a filesystem limit; the session lives on either way.
  CHECK(run->stdout_text.find("files ") != std::string::npos);
  auto after = fixture.Python(id, "import os\nprint(len(os.listdir('/tmp')) > 0, 'alive')");
  CHECK(after.exit_code == 0);
  CHECK(after.stdout_text == "True alive\n");
}

}  // namespace behaviour_test
