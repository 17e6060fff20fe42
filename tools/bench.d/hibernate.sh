#!/usr/bin/env bash
# Hibernate and resume (README "Hibernate, resume, fork"), over MCP stdio: a session with a small
# state and one holding a ~100 MB DataFrame, side by side. Resume: request to response of the
# first call after the session hibernated (print(1)), with the warm pool of 2; hibernate: from the
# end of the last call until sandbox_session_status says "hibernated", less the idle setting
# (polled every 20 ms, so the figure is within 20 ms); the saved size. Prints markdown. Needs root
# and the default image (with python3-dill). NOT YET MEASURED: the README carries no figures
# from it (the development host was shared).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
export SANDBOX_LOG_LEVEL=warn SANDBOX_IMAGE=python WARM_POOL_LIB=$root/tools/lib
exec python3 - "$bin" "${SANDBOX_BENCH_RUNS:-10}" <<'PY'
import os, sys, time

sys.path.insert(0, os.environ["WARM_POOL_LIB"])
from warm_pool_bench import Server, pct

BIN, RUNS = sys.argv[1], int(sys.argv[2])
IDLE_S = 1.0
SMALL = "x = 1\ns = 'text'\ndef f(v):\n    return v + x\n"
LARGE = ("import numpy as np, pandas as pd\n"
         "df = pd.DataFrame(np.random.rand(1_300_000, 10))\n")  # ~100 MB of float64


def status(server, sid):
    return server.tool("sandbox_session_status", session_id=sid)


def measure(server, setup):
    hibernate, resume, saved = [], [], 0
    for _ in range(RUNS):
        sid = server.tool("sandbox_run_python", code=setup)["session_id"]
        ended = time.monotonic()
        while status(server, sid)["state"] != "hibernated":
            time.sleep(0.02)
        hibernate.append(time.monotonic() - ended - IDLE_S)
        saved = status(server, sid).get("saved_bytes", 0)
        server.wait_ready(2)
        start = time.monotonic()
        server.tool("sandbox_run_python", session_id=sid, code="print(1)")
        resume.append(time.monotonic() - start)
        server.tool("sandbox_close_session", session_id=sid)
    return hibernate, resume, saved


server = Server(BIN, "--hibernate-after-s", str(IDLE_S), "--pool-size", "2")
rows = [("small state", *measure(server, SMALL)), ("100 MB DataFrame", *measure(server, LARGE))]
print("| session | hibernate p50 | resume p50 / p99 (request to response) | saved |")
print("|---|---|---|---|")
for name, hibernate, resume, saved in rows:
    print(f"| {name} | {pct(hibernate, 50):.0f} ms | {pct(resume, 50):.0f} / "
          f"{pct(resume, 99):.0f} ms | {saved / 1e6:.1f} MB |")
PY
