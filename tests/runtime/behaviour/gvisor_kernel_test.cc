// The gVisor backend's point, shown from inside (issue #39): the session's code talks to the
// Sentry, gVisor's kernel in user space, not to the host's kernel. Each check compares with what
// the host kernel says, so a sandbox that ran on the host kernel cannot pass. Skips (as the
// behaviour suite's gVisor part does) when runsc is missing, naming why.
#include <sys/utsname.h>

#include <chrono>
#include <string>

#include "tests/runtime/behaviour/behaviour_fixture.h"

namespace gvisor_kernel_test {

namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string HostKernelRelease() {
  struct utsname uts {};
  REQUIRE(::uname(&uts) == 0);
  return uts.release;
}

}  // namespace

TEST_CASE("gvisor: uname and /proc/version are gVisor's, not the host's", "[behaviour][gvisor]") {
  sandbox::testing::BehaviourFixture fixture("gvisor");
  const std::string host_release = HostKernelRelease();
  auto id = fixture.NewSession();
  auto run = fixture.Python(id,
                            "import os\n"
                            "print('release=' + os.uname().release)\n"
                            "print('version=' + open('/proc/version').read().strip())");
  INFO(run.stdout_text << run.stderr_text);
  REQUIRE(run.exit_code == 0);
  CHECK_FALSE(Contains(run.stdout_text, "release=" + host_release + "\n"));
  CHECK_FALSE(Contains(run.stdout_text, host_release));
  // This Sentry's fixed answers (release 4.4.0 until runsc 20260427); the kernel log, which the
  // Sentry would serve ("Starting gVisor..."), the project's policy refuses here as everywhere.
  CHECK(Contains(run.stdout_text, "version=Linux version "));
}

TEST_CASE("gvisor: a system call the project's policy refuses is refused inside gVisor too",
          "[behaviour][gvisor]") {
  sandbox::testing::BehaviourFixture fixture("gvisor");
  auto id = fixture.NewSession();
  // unshare(CLONE_NEWUSER): the Sentry implements it (it would make a user namespace of its
  // own, as it did before the policy was put inside: unshare=0 and an empty uid_map), and the
  // project's seccomp policy, which the Sentry now enforces on the guest (runsc --oci-seccomp,
  // guest_seccomp.h), refuses it with EPERM as the namespace backend's kernel does.
  auto run = fixture.Python(id,
                            "import ctypes, os\n"
                            "libc = ctypes.CDLL(None, use_errno=True)\n"
                            "rc = libc.unshare(0x10000000)\n"
                            "print('unshare=%d %s' % (rc, os.strerror(ctypes.get_errno())))\n"
                            "print(open('/proc/self/uid_map').read().split())\n"
                            "status = open('/proc/self/status').read()\n"
                            "print([l for l in status.splitlines() if l.startswith('Seccomp:')])\n"
                            "import threading\n"
                            "t = threading.Thread(target=lambda: print('thread ran')); t.start()\n"
                            "t.join()");
  INFO(run.stdout_text << run.stderr_text);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.stdout_text, "unshare=-1 Operation not permitted"));
  CHECK(Contains(run.stdout_text, "['0', '0', '4294967295']"));  // still the sandbox's own map
  CHECK(Contains(run.stdout_text, "['Seccomp:\\t2']"));
  // Positive control: clone3 is left to the Sentry's ENOSYS, so glibc's threads still start.
  CHECK(Contains(run.stdout_text, "thread ran"));
}

TEST_CASE("gvisor: with a warm pool on, a session runs, hibernates and resumes with its state",
          "[behaviour][gvisor]") {
  sandbox::testing::BehaviourFixture fixture("gvisor");
  fixture.Reconfigure([](sandbox::SessionConfig& config) {
    config.pool_size = 1;
    config.hibernate_after = std::chrono::hours(1);  // on; the test hibernates by hand
  });
  auto id = fixture.NewSession();
  CHECK(fixture.Python(id, "x = 41\nopen('/mnt/data/kept.txt', 'w').write('kept')").exit_code == 0);
  REQUIRE(fixture.manager().Hibernate(id));
  CHECK(fixture.manager().HibernatedCount() == 1);
  // The next call resumes it in a new gVisor sandbox (from the pool when one is ready).
  auto resumed = fixture.Python(id, "print(x + 1, open('/mnt/data/kept.txt').read())");
  INFO(resumed.stdout_text << resumed.stderr_text);
  CHECK(resumed.stdout_text == "42 kept\n");
}

}  // namespace gvisor_kernel_test
