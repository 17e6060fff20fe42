// Issue 12 item 1: the kernel's per-user counters (inotify instances and watches, queued
// signals, POSIX message queues) used inside a sandbox are charged to that sandbox and capped
// there, never to the server's uid. A sandbox exhausts each of them; while it holds them the
// server's uid (this test process) must still get each one, and the sandbox must have stopped
// at its own cap (the caps in force, as status reports them). Runs as root (each sandbox owns
// its user namespace as its own host uid) and again as an unprivileged user (each sandbox gets
// a share of the user's budget).
#include <fcntl.h>
#include <linux/nsfs.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>

#include <catch2/catch.hpp>

#include "tests/runtime/ns/ns_test_support.h"

namespace kernel_counters_test {

using namespace sandbox;
using namespace sandbox::testing;

namespace {

// "name <count> <ERRNO>" as the cell prints it.
struct Exhausted {
  long count = -1;
  std::string error;
};
Exhausted Parse(const std::string& out, const std::string& name) {
  std::smatch m;
  std::regex line("(^|\n)" + name + " ([0-9]+) ([A-Z0-9]+)");
  if (!std::regex_search(out, m, line)) return {};
  return {std::stol(m[2]), m[3]};
}

long CapInForce(const EnforcedLimits& limits, const std::string& name) {
  for (const auto& limit : limits.limits) {
    if (limit.name == name) return std::strtol(limit.value.c_str(), nullptr, 10);
  }
  return -1;
}

// Holds every counter in globals (the worker keeps them across calls). Message queues are
// small (one 4 KiB message) so that the byte budget, not the ipc namespace's 256 queues, ends
// them; signals go to a child that blocks them, so they stay queued.
constexpr const char* kExhaust = R"(
import ctypes, errno, os, signal
libc = ctypes.CDLL(None, use_errno=True)
def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
held = []
while True:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        print('instances', len(held), err()); break
    held.append(fd)
os.makedirs('/tmp/w', exist_ok=True)
watches, done, i = 0, False, 0
while not done:
    path = b'/tmp/w/%d' % i
    open(path, 'w').close()
    i += 1
    for fd in held:
        if libc.inotify_add_watch(fd, path, 2) < 0:
            print('watches', watches, err()); done = True; break
        watches += 1
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.read(r, 1)
    os._exit(0)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
queued = 0
while libc.sigqueue(child, sig, ctypes.c_void_p(0)) == 0:
    queued += 1
print('signals', queued, err())
class MqAttr(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_long), ('maxmsg', ctypes.c_long),
                ('msgsize', ctypes.c_long), ('curmsgs', ctypes.c_long), ('pad', ctypes.c_long * 4)]
attr = MqAttr(0, 1, 4096, 0)
queues = []
while True:
    q = libc.mq_open(b'/sbx%d' % len(queues), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
    if q < 0:
        print('mqueues', len(queues), err()); break
    queues.append(q)
)";

}  // namespace

TEST_CASE("security: kernel per-user counters are charged to the sandbox, not the server's uid",
          "[sandbox][security]") {
  std::string rootfs = TestRootfs();
  std::string agent_dir = TestAgentDir();
  if (!RootfsHas(rootfs, "/usr/bin/python3")) SkipTest("the rootfs has no python3");
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  auto spec = MakeSpec(rootfs, agent_dir);
  spec.limits.memory_bytes = 512ull << 20;  // room for 192k inotify marks (kernel memory)
  auto box = StartAgent(*backend, spec);
  // The sandbox's user namespace belongs to the session's host uid (as root, its own one).
  {
    std::string path = "/proc/" + std::to_string(box.ns().init_pid()) + "/ns/user";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    uid_t owner = 0;
    CHECK(::ioctl(fd, NS_GET_OWNER_UID, &owner) == 0);
    ::close(fd);
    CHECK(owner == box.ns().host_uid());
    if (::geteuid() == 0) CHECK(owner != 0);
  }
  auto r = box.Python(kExhaust, 120);
  INFO(r.stdout_text << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  Exhausted instances = Parse(r.stdout_text, "instances");
  Exhausted watches = Parse(r.stdout_text, "watches");
  Exhausted signals = Parse(r.stdout_text, "signals");
  Exhausted mqueues = Parse(r.stdout_text, "mqueues");
  CHECK(instances.error == "EMFILE");
  CHECK(watches.error == "ENOSPC");
  CHECK(signals.error == "EAGAIN");
  CHECK(mqueues.error == "EMFILE");

  // While the sandbox holds all that, the server's uid gets each of them.
  int inotify = ::inotify_init1(IN_CLOEXEC);
  CHECK(inotify >= 0);
  if (inotify >= 0) {
    CHECK(::inotify_add_watch(inotify, tmp.path().c_str(), IN_MODIFY) >= 0);
    ::close(inotify);
  }
  {
    const int sig = SIGRTMIN + 3;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, sig);
    REQUIRE(::pthread_sigmask(SIG_BLOCK, &set, &old) == 0);
    union sigval value = {};
    int queued = ::pthread_sigqueue(::pthread_self(), sig, value);
    CHECK(queued == 0);
    if (queued == 0) {
      struct timespec now = {0, 0};
      CHECK(::sigtimedwait(&set, nullptr, &now) == sig);
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  {
    struct mq_attr attr = {};
    attr.mq_maxmsg = 1;
    attr.mq_msgsize = 4096;
    std::string name = "/mcp-sandbox-test-" + std::to_string(::getpid());
    mqd_t q = ::mq_open(name.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600, &attr);
    CHECK(q != static_cast<mqd_t>(-1));
    if (q != static_cast<mqd_t>(-1)) {
      ::mq_close(q);
      ::mq_unlink(name.c_str());
    }
  }

  // The sandbox stopped at its own caps, as reported.
  const EnforcedLimits& caps = box.sandbox->enforced_limits();
  long max_instances = CapInForce(caps, "inotify_instances");
  long max_watches = CapInForce(caps, "inotify_watches");
  long max_signals = CapInForce(caps, "signals_pending");
  REQUIRE(max_instances > 0);
  CHECK(instances.count == max_instances);
  CHECK(watches.count == max_watches);
  // Other pending signals of the sandbox's processes count too.
  CHECK(signals.count <= max_signals);
  CHECK(signals.count >= max_signals - 8);
  CHECK(mqueues.count >= 1);

  auto again = box.Python("print(6 * 7)");  // the session stays usable
  CHECK(again.stdout_text == "42\n");
}

}  // namespace kernel_counters_test
