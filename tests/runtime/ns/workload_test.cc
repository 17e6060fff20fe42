// What users run keeps working under the isolation baseline and the seccomp policy: Python,
// subprocess, threads, multiprocessing, and the data stack when the image has it.
#include <catch2/catch.hpp>

#include "tests/runtime/ns/ns_test_support.h"

namespace workload_test {

using namespace sandbox;
using namespace sandbox::testing;

namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool ImageHasPythonPackage(const std::string& rootfs, const std::string& package) {
  std::string found;
  RunShell("ls -d " + rootfs + "/usr/lib/python3*/dist-packages/" + package + " " + rootfs +
               "/usr/local/lib/python3*/site-packages/" + package + " " + rootfs +
               "/usr/lib/python3*/site-packages/" + package + " 2>/dev/null | head -1",
           &found);
  return !found.empty();
}

}  // namespace

TEST_CASE("workload: python subprocess threads and multiprocessing work", "[sandbox][workload]") {
  std::string rootfs = TestRootfs();
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  auto box = StartAgent(*backend, MakeSpec(rootfs, TestAgentDir()));

  auto state = box.Python("x = 41");
  CHECK(state.exit_code == 0);
  auto r = box.Python(R"(
import subprocess, threading, multiprocessing, os, socket, tempfile
print('state', x + 1)
print('sub', subprocess.run(['sh', '-c', 'echo hi; id -u'], capture_output=True, text=True).stdout.split())
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i * i)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print('threads', sorted(out))
def sq(v):
    return v * v
with multiprocessing.Pool(2) as pool:
    print('pool', pool.map(sq, range(5)))
q = multiprocessing.Queue(); q.put('queued'); print('queue', q.get())
lock = multiprocessing.Lock(); lock.acquire(); lock.release(); print('semaphore ok')
print('hostname', socket.gethostname())
with tempfile.NamedTemporaryFile(dir='/tmp') as fh:
    fh.write(b'x'); fh.flush(); print('tmpfile ok')
print('cwd', os.getcwd())
)");
  INFO(r.stdout_text << r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.stdout_text, "state 42"));
  CHECK(Contains(r.stdout_text, "sub ['hi', '1000']"));
  CHECK(Contains(r.stdout_text, "threads [0, 1, 4, 9, 16, 25, 36, 49]"));
  CHECK(Contains(r.stdout_text, "pool [0, 1, 4, 9, 16]"));
  CHECK(Contains(r.stdout_text, "queue queued"));
  CHECK(Contains(r.stdout_text, "semaphore ok"));
  CHECK(Contains(r.stdout_text, "hostname sandbox"));
  CHECK(Contains(r.stdout_text, "tmpfile ok"));
  CHECK(Contains(r.stdout_text, "cwd /mnt/data"));

  auto sh = box.Shell(
      "echo $((6*7)) && ls / | tr '\\n' ' ' && cat /etc/hostname >/dev/null; "
      "uname -n");
  INFO(sh.stdout_text << sh.stderr_text);
  CHECK(sh.exit_code == 0);
  CHECK(Contains(sh.stdout_text, "42\n"));
  CHECK(Contains(sh.stdout_text, "sandbox\n"));
}

TEST_CASE("workload: numpy pandas and matplotlib work", "[sandbox][workload]") {
  std::string rootfs = TestRootfs(TestImage::kFull);
  for (const char* package : {"numpy", "pandas", "matplotlib"}) {
    if (!ImageHasPythonPackage(rootfs, package)) {
      SkipTest(std::string("the image at ") + rootfs + " has no " + package +
               " (build the default image: mcp-sandbox image build)");
    }
  }
  TempDir tmp;
  auto backend = MakeBackend(tmp);
  auto spec = MakeSpec(rootfs, TestAgentDir());
  spec.limits.memory_bytes = 1ull << 30;
  auto box = StartAgent(*backend, spec);
  auto r = box.Python(R"(
import numpy as np, pandas as pd, matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
a = np.arange(12).reshape(3, 4)
print('numpy', int(a.sum()), round(float(np.linalg.det(np.eye(3) * 2)), 6))
df = pd.DataFrame({'k': ['a', 'b', 'a'], 'v': [1, 2, 3]})
print('pandas', df.groupby('k')['v'].sum().to_dict())
fig, ax = plt.subplots(); ax.plot([1, 2, 3]); fig.savefig('/mnt/data/plot.png'); plt.close(fig)
import os; print('png', os.path.getsize('/mnt/data/plot.png') > 1000)
)",
                      120);
  INFO(r.stdout_text << r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.stdout_text, "numpy 66 8.0"));
  CHECK(Contains(r.stdout_text, "pandas {'a': 4, 'b': 2}"));
  CHECK(Contains(r.stdout_text, "png True"));
}

}  // namespace workload_test
