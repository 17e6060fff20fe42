"""The session, pool and burst benches of one kernel (tools/bench.d/kernels.sh runs this on the
host and inside ../shared/tools/run-in-vm): each figure with the pool on (the defaults) and off
(--pool-size 0), so a kernel's row is a ratio within that kernel. Emulated VMs are slow in
absolute terms; never compare times across kernels.
usage: kernel_bench.py BINARY STATE_DIR SAMPLES BURST_SESSIONS BURST_CALLS
Prints one JSON object: create+print(1) p50/p99 ms, pool on and off; the burst's call p99 ms,
pool on and off (tools/lib/burst_bench.py over stdio); the pool's fill rate (sandboxes/s)."""
import json
import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from warm_pool_bench import Server, pct  # noqa: E402

binary, state = sys.argv[1], sys.argv[2]
samples, burst_sessions, burst_calls = (int(x) for x in sys.argv[3:6])
os.environ["SANDBOX_STATE_DIR"] = state


def create_and_print(pool):
    """`samples` creates + print(1), request to response; with a pool, each once it is full."""
    server = Server(binary, "--pool-size", str(pool), client_name="kernel-bench")
    began, took = time.monotonic(), []
    fill_s = None
    for _ in range(samples):
        if pool:
            server.wait_ready(pool)
            if fill_s is None:
                fill_s = time.monotonic() - began
        start = time.monotonic()
        session = server.tool("sandbox_create_session")["session_id"]
        server.tool("sandbox_run_python", session_id=session, code="print(1)")
        took.append(time.monotonic() - start)
        server.tool("sandbox_close_session", session_id=session)
    server.stop()
    return took, fill_s


def burst(pool):
    env = dict(os.environ, SANDBOX_POOL_SIZE=str(pool))
    if not pool:
        env["SANDBOX_POOL_PRELOAD"] = ""
    out = subprocess.run([sys.executable, os.path.join(here, "burst_bench.py"), binary,
                          str(burst_sessions), str(burst_calls)],
                         capture_output=True, text=True, env=env)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {"error": out.stderr[-300:]}


on, fill_s = create_and_print(2)
off, _ = create_and_print(0)
result = {
    "kernel": os.uname().release,
    "create_print_ms": {"pool": [pct(on, 50), pct(on, 99)], "no_pool": [pct(off, 50), pct(off, 99)]},
    "pool_fill_per_s": round(2 / fill_s, 3) if fill_s else None,
}
if burst_sessions > 0:
    result["burst"] = {"pool": burst(2), "no_pool": burst(0)}
print(json.dumps(result))
