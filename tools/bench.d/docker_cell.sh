#!/usr/bin/env bash
# Why a pandas cell is slower on the Docker backend (issue #28): one session per backend (pool
# off), 15 warm runs each of three cells, timed inside the sandbox (perf_counter) and from the
# client (MCP stdio, request to response): the pandas cell of warm_pool.sh without its import, a
# pure-Python loop (CPU only) and 20000 stat() calls under dist-packages (file-system lookups);
# then the sandbox's seccomp and speculation state, and its cgroup's CFS quota and throttling.
# Needs root, the default image and a Docker daemon (Docker rows n/a without one). Prints
# markdown; BENCH_CELL_ROUNDS (2) rounds alternate the backends.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "n/a: runs as root only"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
backends=namespace
if "$root/tools/lib/dockerd.sh" status >/dev/null 2>&1 || "$root/tools/lib/dockerd.sh" start >&2; then
  backends="namespace docker"
fi
export SANDBOX_LOG_LEVEL=warn SANDBOX_IMAGE=python WARM_POOL_LIB=$root/tools/lib
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$bin" "${BENCH_CELL_ROUNDS:-2}" $backends <<'PY'
import os, statistics, sys, time

sys.path.insert(0, os.environ["WARM_POOL_LIB"])
from warm_pool_bench import Server

BIN, ROUNDS, BACKENDS = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
TIMED = "import time\nt = time.perf_counter()\n%s\nprint(round((time.perf_counter() - t) * 1000, 3))"
CELLS = [
    ("pandas cell", TIMED % "df = pd.DataFrame({'a': range(1000)}); s = str(df.describe())"),
    ("Python loop", TIMED % "x = 0\nfor i in range(300000): x += i"),
    ("20000 stat()", TIMED % "for i in range(20000): os.stat(pd.__file__)"),
]
PROBE = ("print(' '.join(l.replace('\\t', '') for l in open('/proc/self/status').read().splitlines()"
         " if l.startswith(('Seccomp:', 'Seccomp_filters', 'Speculation_Store'))))")
print("| round | backend | " + " | ".join("%s inside / from the client, p50" % n for n, _ in CELLS)
      + " | status | CFS quota, throttled |")
print("|---|---|" + "---|" * len(CELLS) + "---|---|")
for round_ in range(1, ROUNDS + 1):
    for backend in BACKENDS:
        server = Server(BIN, "--pool-size", "0", backend=backend)
        sid = server.tool("sandbox_create_session")["session_id"]
        server.tool("sandbox_run_python", session_id=sid, code="import os, pandas as pd")
        figures = []
        for _, code in CELLS:
            inside, outside = [], []
            for _ in range(15):
                start = time.monotonic()
                result = server.tool("sandbox_run_python", session_id=sid, code=code)
                outside.append((time.monotonic() - start) * 1000)
                inside.append(float(result["stdout"]))
            figures.append("%.1f / %.1f ms" % (statistics.median(inside), statistics.median(outside)))
        status = server.tool("sandbox_run_python", session_id=sid, code=PROBE)["stdout"].strip()
        cpu = "?"
        for name in os.listdir("/proc"):
            try:
                with open("/proc/%s/cgroup" % name) as f:
                    groups = f.read()
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    if b"worker.py" not in f.read():
                        continue
            except OSError:
                continue
            path = [l.split(":", 2)[2] for l in groups.splitlines() if l.split(":")[1] in ("cpu", "cpu,cpuacct")]
            if path and (sid in path[0] or (backend == "docker" and "/docker/" in path[0])):
                d = "/sys/fs/cgroup/cpu" + path[0]
                try:
                    quota = open(d + "/cpu.cfs_quota_us").read().strip()
                    stat = dict(l.split() for l in open(d + "/cpu.stat").read().splitlines())
                    cpu = "%s us, %s of %s periods" % (quota, stat.get("nr_throttled"), stat.get("nr_periods"))
                except OSError:
                    pass
                break
        server.stop()
        print("| %d | %s | %s | %s | %s |" % (round_, backend, " | ".join(figures), status, cpu))
PY
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
