// What holds against a /tmp inode flood on the gVisor backend (issue #39): runsc's tmpfs ignores
// nr_inodes, so empty files (no data pages: size= never stops them) grow the Sentry's memory
// until the host cgroup, which holds the Sentry at the session's memory limit plus 64 MiB, kills
// the sandbox. The claim tested here, as root (where that cgroup exists): the flood ends its own
// sandbox only, with the tool's "the sandbox has ended" error rather than a hang, another
// session lives on with its state, nothing of the flooded sandbox stays running, and a new
// session starts. As an ordinary user (runsc --rootless) there is no cgroup and nothing bounds
// the Sentry's growth but the host's memory: docs/security.md says so.
#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/runtime/behaviour/behaviour_fixture.h"
#include "tests/support/test_support.h"

namespace gvisor_tmp_flood_test {

namespace {

// Processes whose command line names `id` (runsc run, the Sentry and the Gofer carry it).
int ProcessesNaming(const std::string& id) {
  int count = 0;
  DIR* proc = ::opendir("/proc");
  REQUIRE(proc != nullptr);
  while (struct dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream cmdline(std::string("/proc/") + entry->d_name + "/cmdline");
    std::stringstream text;
    text << cmdline.rdbuf();
    if (text.str().find(id) != std::string::npos) ++count;
  }
  ::closedir(proc);
  return count;
}

}  // namespace

TEST_CASE("gvisor: a /tmp inode flood ends its own sandbox only and leaves nothing running",
          "[behaviour][gvisor]") {
  if (::geteuid() != 0) {
    sandbox::testing::SkipTest(
        "needs root: as an ordinary user runsc --rootless has no cgroup, and nothing bounds the "
        "flood but the host's memory (docs/security.md \"gVisor backend\")");
  }
  sandbox::testing::BehaviourFixture fixture("gvisor");
  auto bystander = fixture.NewSession();
  fixture.Python(bystander, "keep = 41");
  sandbox::SessionOptions small;
  small.memory_bytes = 128ull << 20;  // the flood's sandbox ends sooner; the claim is the same
  auto flooded = fixture.NewSession(small);
  sandbox::RunRequest request;
  request.code = R"(
import os, errno
n, err = 0, None
try:
    for n in range(3000000):
        os.close(os.open(f'/tmp/f{n}', os.O_CREAT | os.O_WRONLY, 0o644))
    n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print('files', n, 'error', err)
)";
  request.timeout_s = 60;  // the fixture's maximum; the sandbox ends in about 30 s on ptrace
  auto run = fixture.manager().Run(flooded, request);
  if (run) {
    // A runsc whose tmpfs caps inodes would answer ENOSPC and keep the session: then this test's
    // claim (and docs/security.md) is out of date.
    FAIL("the flood ended without killing the sandbox: "
         << run->stdout_text << run->stderr_text << " (timed out: " << run->timed_out << ")");
  }
  INFO(run.error().message);
  CHECK(run.error().message.find("the sandbox has ended") != std::string::npos);
  CHECK(ProcessesNaming(flooded) == 0);
  // The other session and its state, and a new one.
  auto after = fixture.Python(bystander, "print(keep + 1)");
  CHECK(after.stdout_text == "42\n");
  auto fresh = fixture.NewSession();
  CHECK(fixture.Python(fresh, "print('fresh')").stdout_text == "fresh\n");
}

}  // namespace gvisor_tmp_flood_test
