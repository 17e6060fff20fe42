// Hibernate, resume and fork (docs/sessions.md "Hibernate, resume, fork") over HostBackend: the
// real save and restore code (runtime/agent/session_state.py in Debian's Python with dill) and the
// real on-disk store, with the hostile cases: a crafted archive written by a cell, a symlink
// farm in /mnt/data, a state above its cap, files tampered with on disk, the TTL and the disk
// cap evicting in order. Seconds, without root, an image or a daemon.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "runtime/session/saved_sessions.h"
#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/local_agent.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox::session_hibernation_test {
namespace {

using namespace std::chrono_literals;
using testing::ManualClock;

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

struct Fixture {
  // replica: SANDBOX_REPLICA_ID ("" on a single host); state_dir: another's, shared as replicas
  // on one host share theirs ("" for a fresh one).
  explicit Fixture(std::string replica = "", std::string state_dir = "")
      : replica_id(std::move(replica)), shared_state_dir(std::move(state_dir)) {
    Start();
  }
  void Start() {
    SessionConfig config;
    config.default_image = "host";
    config.state_dir = shared_state_dir.empty() ? state.path() : shared_state_dir;
    config.replica_id = replica_id;
    config.max_sessions = 4;
    config.exec_timeout_s = 30;
    config.ttl = std::chrono::minutes(30);
    config.hibernate_after = std::chrono::minutes(10);
    config.saved_max_bytes = 64ull << 20;
    config.clock = [this] { return clock.Now(); };
    backend = std::make_shared<testing::HostBackend>();
    manager = std::make_unique<SessionManager>(config, backend, testing::HostImageResolver());
  }
  std::string Create(SessionOptions options = {}) {
    auto info = manager->Create(options);
    REQUIRE(info);
    return info->id;
  }
  RunResult Python(const std::string& id, const std::string& code) {
    RunRequest request;
    request.code = code;
    request.timeout_s = 20;
    auto result = manager->Run(id, request);
    INFO(code);
    REQUIRE(result);
    INFO(result->stderr_text);
    CHECK(result->exit_code == 0);
    return *result;
  }
  std::string SavedDir(const std::string& id) const { return state.Join("hibernated/" + id); }

  std::string replica_id;
  std::string shared_state_dir;
  ManualClock clock;
  testing::TempDir state;
  std::shared_ptr<testing::HostBackend> backend;
  std::unique_ptr<SessionManager> manager;
};

// The tests that need the host's python3-dill and pandas are tagged [hibernation], not [unit]:
// a skip ends the whole executable (SkipTest exits 77), and the [unit] tier runs as one process
// where those may be missing (a release's build root). ctest runs them one by one.
bool HaveDill() {
  return testing::PythonHasModule("/usr/bin/python3", "dill") &&
         testing::PythonHasModule("/usr/bin/python3", "pandas");
}

std::string Joined(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += item + "\n";
  return text;
}

TEST_CASE("hibernation: a session is saved, its sandbox stopped, and resumed intact",
          "[hibernation]") {
  if (!HaveDill()) {
    testing::SkipTest(
        "needs Debian's python3-dill and python3-pandas (tools/lib/common.sh TEST_PACKAGES)");
  }
  Fixture f;
  std::string id = f.Create();
  f.Python(id,
           "import os, socket, threading, time\n"
           "import numpy as np\nimport pandas as pd\n"
           "n = 41\ns = 'text'\ndf = pd.DataFrame({'a': [1, 2, 3]})\narr = np.arange(10)\n"
           "def add(x):\n    return x + n\n"
           "class Point:\n    def __init__(self, x): self.x = x\n"
           "p = Point(7)\nsquare = lambda v: v * v\n"
           "open('/mnt/data/data.csv', 'w').write('a,b\\n1,2\\n')\n"
           "os.makedirs('/mnt/data/work', exist_ok=True)\nos.chdir('/mnt/data/work')\n"
           "os.environ['MY_SETTING'] = 'on'\n"
           "sock = socket.socket()\n"
           "stop = threading.Event()\n"
           "worker = threading.Thread(target=stop.wait, daemon=True)\nworker.start()\n");
  REQUIRE(f.manager->Hibernate(id));
  // No sandbox left: its agent killed and reaped, its dirs removed.
  CHECK(f.backend->started().at(0)->destroyed);
  auto info = f.manager->Get(id);
  REQUIRE(info);
  CHECK(info->state == "hibernated");
  CHECK(info->saved_bytes > 0);
  CHECK(f.manager->SessionCount() == 0);
  REQUIRE(f.manager->List().size() == 1);

  auto run = f.Python(id,
                      "print(n + 1, s, int(df.a.sum()), int(arr.sum()), add(1), "
                      "isinstance(p, Point), p.x, square(3), pd.__name__, np.__name__, "
                      "os.getcwd(), os.environ.get('MY_SETTING'), open('/mnt/data/data.csv').read()"
                      ".splitlines()[1])");
  CHECK(run.resumed);
  CHECK(run.stdout_text == "42 text 6 45 42 True 7 9 pandas numpy /mnt/data/work on 1,2\n");
  std::string lost = Joined(run.not_restored);
  INFO(lost);
  CHECK(lost.find("sock (socket.socket)") != std::string::npos);
  CHECK(lost.find("worker (threading.Thread): a running thread") != std::string::npos);
  CHECK(f.backend->started().size() == 2);
  // Only the first call after a resume says so.
  CHECK_FALSE(f.Python(id, "pass").resumed);

  // Closing deletes what was saved.
  CHECK(Exists(f.SavedDir(id)));
  REQUIRE(f.manager->Close(id));
  CHECK_FALSE(Exists(f.SavedDir(id)));
  CHECK(f.manager->Get(id).error().code == ErrorCode::kSessionNotFound);
}

TEST_CASE("hibernation: idle time hibernates, an orderly stop saves, a new manager resumes",
          "[hibernation]") {
  if (!HaveDill()) testing::SkipTest("needs Debian's python3-dill and python3-pandas");
  Fixture f;
  std::string idle = f.Create();
  std::string kept = f.Create();
  f.Python(idle, "v = 'idle one'");
  f.Python(kept, "v = 'kept across servers'");
  f.clock.Advance(5min);
  f.Python(kept, "pass");
  f.clock.Advance(6min);  // idle: 11 min > 10; kept: 6 min
  f.manager->ExpireIdle();
  CHECK(f.manager->Get(idle)->state == "hibernated");
  CHECK(f.manager->Get(kept)->state == "idle");
  // An orderly stop saves every live session, then a new manager on the same state dir.
  f.manager.reset();
  for (const auto& sandbox : f.backend->started()) CHECK(sandbox->destroyed);
  f.Start();
  CHECK(f.manager->List().size() == 2);
  CHECK(f.Python(kept, "print(v)").stdout_text == "kept across servers\n");
  CHECK(f.Python(idle, "print(v)").stdout_text == "idle one\n");
}

TEST_CASE("hibernation: replicas sharing a state dir each list only their own saves",
          "[hibernation]") {
  if (!HaveDill()) testing::SkipTest("needs Debian's python3-dill and python3-pandas");
  Fixture r1("r1");
  Fixture r2("r2", r1.state.path());
  std::string saved = r1.Create();
  std::string resumed = r1.Create();
  r1.Python(saved, "v = 'saved'");
  r1.Python(resumed, "v = 'resumed'");
  REQUIRE(r1.manager->Hibernate(saved));
  REQUIRE(r1.manager->Hibernate(resumed));
  // Resumed, it keeps its last save on disk until it is saved again: listed once, live.
  CHECK(r1.Python(resumed, "print(v)").stdout_text == "resumed\n");
  auto mine = r1.manager->List();
  REQUIRE(mine.size() == 2);
  for (const auto& info : mine) CHECK(info.state == (info.id == saved ? "hibernated" : "idle"));
  // r1's saves lie in r2's state dir too, but are r1's to show: a sibling listing them would
  // show a live session as hibernated, and ids it answers replica_unavailable for.
  CHECK(r2.manager->List().empty());
  std::string own = r2.Create();
  auto theirs = r2.manager->List();
  REQUIRE(theirs.size() == 1);
  CHECK(theirs[0].id == own);
}

TEST_CASE("hibernation: fork copies files and state and the two diverge", "[hibernation]") {
  if (!HaveDill()) testing::SkipTest("needs Debian's python3-dill and python3-pandas");
  Fixture f;
  std::string id = f.Create();
  f.Python(id, "items = [1, 2]\nopen('/mnt/data/f.txt', 'w').write('base')");
  auto fork = f.manager->Fork(id);
  REQUIRE(fork);
  CHECK(fork->id != id);
  CHECK(fork->state == "hibernated");
  f.Python(id, "items.append('original')");
  f.Python(fork->id, "items.append('fork')\nopen('/mnt/data/f.txt', 'a').write('+fork')");
  CHECK(f.Python(id, "print(items, open('/mnt/data/f.txt').read())").stdout_text ==
        "[1, 2, 'original'] base\n");
  CHECK(f.Python(fork->id, "print(items, open('/mnt/data/f.txt').read())").stdout_text ==
        "[1, 2, 'fork'] base+fork\n");
  // A fork of a hibernated session copies the saved files.
  REQUIRE(f.manager->Hibernate(id));
  auto second = f.manager->Fork(id);
  REQUIRE(second);
  CHECK(f.Python(second->id, "print(items)").stdout_text == "[1, 2, 'original']\n");
  CHECK(f.manager->Get(id)->state == "hibernated");
}

TEST_CASE("hibernation: a crafted archive and a symlink farm stay inside the session",
          "[hibernation]") {
  if (!HaveDill()) testing::SkipTest("needs Debian's python3-dill and python3-pandas");
  Fixture f;
  testing::TempDir outside;  // on the host: nothing may appear here
  std::string id = f.Create();
  // A symlink farm: links out of the data dir (to /, /etc/passwd, the host dir above), a loop,
  // and one good link inside.
  f.Python(id,
           "import os\nos.makedirs('/mnt/data/farm', exist_ok=True)\n"
           "for i in range(200):\n"
           "    os.symlink('/' if i % 3 == 0 else '/etc/passwd' if i % 3 == 1 else '" +
               outside.path() +
               "', '/mnt/data/farm/l%d' % i)\n"
               "os.symlink('loop', '/mnt/data/farm/loop')\n"
               "open('/mnt/data/real.txt', 'w').write('real')\n"
               "os.symlink('real.txt', '/mnt/data/inside')\n");
  REQUIRE(f.manager->Hibernate(id));
  auto run = f.Python(id,
                      "import os\nprint(sorted(os.listdir('/mnt/data/farm')), "
                      "open('/mnt/data/inside').read())");
  CHECK(run.stdout_text == "['loop'] real\n");  // the loop points inside (at itself)
  CHECK(Joined(run.not_restored).find("farm/l0 (symlink): points outside the data dir") !=
        std::string::npos);

  // A cell replaces the save with its own archive: members that climb out, an absolute path,
  // a link to the host dir followed by a file through it, and a pickle that is not a dict.
  f.Python(
      id,
      "import io, os, sys, tarfile\n"
      "def crafted(action, argument):\n"
      "    path = os.path.join(os.environ.get('SANDBOX_AGENT_TMP_DIR', '/tmp'), "
      "'.sandbox-session-state.tar')\n"
      "    if action != 'save':\n"
      "        return\n"
      "    with tarfile.open(path, 'w') as t:\n"
      "        def add(name, data=b'x', link=None):\n"
      "            info = tarfile.TarInfo(name)\n"
      "            if link:\n"
      "                info.type, info.linkname = tarfile.SYMTYPE, link\n"
      "                t.addfile(info)\n"
      "            else:\n"
      "                info.size = len(data)\n"
      "                t.addfile(info, io.BytesIO(data))\n"
      "        add('data/../../../../../../" +
          outside.path().substr(1) +
          "/climbed')\n"
          "        add('/" +
          outside.path().substr(1) +
          "/absolute')\n"
          "        add('data/escape', link='" +
          outside.path() +
          "')\n"
          "        add('data/escape/through')\n"
          "        add('state/namespace.pkl', b'\\x80\\x04K\\x01.')\n"
          "        add('state/state.json', b'{\"mechanism\": \"pickle\", \"modules\": {}, "
          "\"env\": {}, \"skipped\": []}')\n"
          "    print('{\"size\": 1, \"mechanism\": \"pickle\", \"saved\": [], \"skipped\": []}')\n"
          "sys.modules['_sandbox_worker']._session_state = crafted\n");
  REQUIRE(f.manager->Hibernate(id));
  RunRequest request;
  request.code = "print('after')";
  request.timeout_s = 20;
  auto resumed = f.manager->Run(id, request);
  REQUIRE(resumed);
  CHECK(resumed->resumed);
  std::string lost = Joined(resumed->not_restored);
  INFO(lost);
  CHECK(lost.find("unsafe path in the saved archive") != std::string::npos);
  CHECK(lost.find("escape (symlink): points outside the data dir") != std::string::npos);
  CHECK(lost.find("namespace") != std::string::npos);  // the pickle that is not a dict
  CHECK_FALSE(Exists(outside.Join("climbed")));
  CHECK_FALSE(Exists(outside.Join("absolute")));
  CHECK_FALSE(Exists(outside.Join("through")));
}

TEST_CASE("hibernation: a state above its cap is refused and the session goes on",
          "[hibernation]") {
  if (!HaveDill()) testing::SkipTest("needs Debian's python3-dill and python3-pandas");
  Fixture f;
  SessionOptions small;
  small.memory_bytes = 40ull << 20;  // the cap of its saved state
  std::string id = f.Create(small);
  f.Python(id, "big = bytes(50 << 20)\nkeep = 1");
  auto refused = f.manager->Hibernate(id);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kArtifactTooLarge);
  CHECK(refused.error().message.find("larger than its cap") != std::string::npos);
  CHECK(refused.error().message.find("'big'") != std::string::npos);
  CHECK(f.manager->Get(id)->state == "idle");
  CHECK(f.Python(id, "print(keep)").stdout_text == "1\n");
  CHECK_FALSE(Exists(f.SavedDir(id)));
}

TEST_CASE(
    "hibernation: a worker that dies in the save loses its variables, and the next run says so",
    "[hibernation]") {
  if (!HaveDill()) testing::SkipTest("needs Debian's python3-dill and python3-pandas");
  Fixture f;
  std::string id = f.Create();
  // The worker killed in the middle of the save, as the kernel's OOM killer would.
  f.Python(id,
           "import os, sys\nx = 1\n"
           "def die(action, argument):\n"
           "    os.kill(os.getpid(), 9)\n"
           "sys.modules['_sandbox_worker']._session_state = die\n");
  auto refused = f.manager->Hibernate(id);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("worker died") != std::string::npos);
  CHECK_FALSE(Exists(f.SavedDir(id)));
  auto after = f.Python(id, "print('x' in globals())");
  CHECK(after.state_lost);
  CHECK(after.stdout_text == "False\n");
  CHECK_FALSE(f.Python(id, "print(1)").state_lost);  // said once
}

TEST_CASE("saved sessions: tampering on disk is a clear error, never a load", "[unit]") {
  testing::TempDir dir;
  SavedSessions saved(
      SavedSessionsConfig{.dir = dir.path(), .max_total_bytes = 1 << 20, .ttl = 24h, .clock = {}});
  SavedSessionMeta meta;
  meta.id = "sess_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  REQUIRE(saved.Save(meta, "archive bytes"));
  auto read = saved.Meta(meta.id);
  REQUIRE(read);
  CHECK(read->size == 13);
  CHECK(*saved.LoadArchive(*read) == "archive bytes");

  // One byte changed in the archive: the digest says so.
  REQUIRE(WriteFile(dir.Join(meta.id + "/state.tar"), "archive bytez"));
  auto altered = saved.LoadArchive(*read);
  REQUIRE_FALSE(altered);
  CHECK(altered.error().code == ErrorCode::kSandboxUnavailable);
  CHECK(altered.error().message.find("damaged or was altered on disk") != std::string::npos);
  // The archive replaced by a link (to a file the server could read): refused, not followed.
  REQUIRE(::unlink(dir.Join(meta.id + "/state.tar").c_str()) == 0);
  REQUIRE(::symlink("/etc/passwd", dir.Join(meta.id + "/state.tar").c_str()) == 0);
  CHECK_FALSE(saved.LoadArchive(*read));
  // The metadata garbled, or naming another session.
  REQUIRE(WriteFile(dir.Join(meta.id + "/meta.json"), "{not json"));
  auto garbled = saved.Meta(meta.id);
  REQUIRE_FALSE(garbled);
  CHECK(garbled.error().message.find("meta.json is not a JSON object") != std::string::npos);
  CHECK(saved.Damaged() == std::vector<std::string>{meta.id});
  CHECK(saved.List().empty());
  // Close still removes it.
  CHECK(saved.Remove(meta.id));
  CHECK_FALSE(saved.Contains(meta.id));
}

TEST_CASE("saved sessions: the TTL and the disk cap evict, oldest first", "[unit]") {
  testing::TempDir dir;
  ManualClock clock;
  SavedSessions saved(
      SavedSessionsConfig{.dir = dir.path(), .max_total_bytes = 100, .ttl = 24h, .clock = [&clock] {
                            return clock.Now();
                          }});
  auto save = [&](const std::string& id, size_t bytes) {
    SavedSessionMeta meta;
    meta.id = id;
    clock.Advance(1min);
    return saved.Save(meta, std::string(bytes, 'x'));
  };
  const std::string a = "sess_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  const std::string b = "sess_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
  const std::string c = "sess_cccccccccccccccccccccccccccccccc";
  REQUIRE(save(a, 40));
  REQUIRE(save(b, 40));
  REQUIRE(save(c, 40));  // 120 > 100: the oldest (a) goes
  CHECK_FALSE(saved.Contains(a));
  CHECK(saved.Contains(b));
  CHECK(saved.TotalBytes() == 80);
  auto too_big = save(a, 101);
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().message.find("SANDBOX_SAVED_MAX_BYTES") != std::string::npos);
  // The TTL: b was saved at +2 min, c at +3 min, and the clock is at +4 min (the refused save).
  clock.Advance(24h - 90s);
  CHECK(saved.ExpireOld() == 1);
  CHECK_FALSE(saved.Contains(b));
  auto expired = [&] {
    clock.Advance(1min);
    return saved.Meta(c);
  }();
  REQUIRE_FALSE(expired);
  CHECK(expired.error().code == ErrorCode::kSessionNotFound);
  CHECK_FALSE(saved.Contains(c));
  // Names that are not session ids are never touched, nor read.
  REQUIRE(WriteFile(dir.Join("../outside-file"), "x"));
  CHECK_FALSE(saved.Remove("../outside-file"));
  CHECK(Exists(dir.Join("../outside-file")));
  ::unlink(dir.Join("../outside-file").c_str());
}

}  // namespace
}  // namespace sandbox::session_hibernation_test

namespace sandbox::session_hibernation_test {
namespace {

TEST_CASE("hibernation: a call arriving while its session is being saved waits and resumes it",
          "[unit]") {
  Fixture f;
  std::string id = f.Create();
  const std::string saving = f.backend->started().at(0)->data_dir + "/saving";
  // A global whose pickling announces the save (a file in the session's data dir, which the
  // test sees on the host) and then takes a while: the save of a big state on a loaded host.
  f.Python(id,
           "import time\nn = 5\nopen('/mnt/data/kept.txt', 'w').write('6')\n"
           "class Slow:\n"
           "    def __reduce__(self):\n"
           "        open('/mnt/data/saving', 'w').close()\n"
           "        time.sleep(1.5)\n"
           "        return (int, ())\n"
           "slow = Slow()\n");
  auto hibernated = std::async(std::launch::async, [&] { return f.manager->Hibernate(id); });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!Exists(saving) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(Exists(saving));
  // Mid-save: before, session_busy; now the call waits for the save, then resumes the session.
  // Its global and its file come back. (Without dill the class Slow is pickled by name, which
  // the new worker does not have: only that global is lost, not its neighbours.)
  RunRequest request;
  request.code = "print(n, open('/mnt/data/kept.txt').read())";
  request.timeout_s = 20;
  auto run = f.manager->Run(id, request);
  REQUIRE(hibernated.get());
  INFO((run ? std::string() : run.error().message));
  REQUIRE(run);
  CHECK(run->stdout_text == "5 6\n");
  CHECK(run->resumed);
  CHECK(f.backend->started().size() == 2);
}

TEST_CASE("hibernation without dill: a class of the session is reported, its neighbours saved",
          "[unit]") {
  // An image without dill (a user's own) pickles a class or function of the session by name,
  // which a new sandbox does not have. Its load used to fail, and with it the one pickle of every
  // global. `sys.modules['dill'] = None` makes `import dill` fail as in such an image.
  testing::TempDir dir;
  const std::string script = dir.Join("state.py");
  REQUIRE(
      WriteFile(script,
                "import os, sys\n"
                "sys.modules['dill'] = None\n"
                "sys.path.insert(0, sys.argv[2])\n"
                "import session_state\n"
                "if sys.argv[1] == 'save':\n"
                "    n = 5\n"
                "    class Point:\n"
                "        pass\n"
                "    p = Point()\n"
                "    square = lambda x: x * x\n"
                "    session_state.save(1 << 20)\n"
                "else:\n"
                "    session_state.restore(os.environ['SANDBOX_AGENT_TMP_DIR'] + "
                "'/.sandbox-session-state.tar')\n"
                "    print(n, 'Point' in globals(), 'p' in globals(), 'square' in globals())\n"));
  REQUIRE(::mkdir(dir.Join("data").c_str(), 0700) == 0);
  REQUIRE(::mkdir(dir.Join("tmp").c_str(), 0700) == 0);
  const std::string run = "SANDBOX_AGENT_DATA_DIR=" + dir.Join("data") +
                          " SANDBOX_AGENT_TMP_DIR=" + dir.Join("tmp") + " /usr/bin/python3 " +
                          script;
  const std::string agent_dir = testing::SourceDir() + "/runtime/agent";
  std::string saved;
  REQUIRE(testing::RunShell(run + " save " + agent_dir, &saved) == 0);
  INFO(saved);
  CHECK(saved.find("\"mechanism\": \"pickle\"") != std::string::npos);
  CHECK(saved.find("Point is defined in the session") != std::string::npos);
  std::string restored;
  REQUIRE(testing::RunShell(run + " restore " + agent_dir, &restored) == 0);
  INFO(restored);
  CHECK(restored.find("5 False False False\n") != std::string::npos);
  CHECK(restored.find("\"name\": \"p\"") != std::string::npos);
  CHECK(restored.find("\"name\": \"square\"") != std::string::npos);
}

}  // namespace
}  // namespace sandbox::session_hibernation_test
