"""The warm pool's refill rate (issue #38): how fast `mcp-sandbox serve` warms pooled sandboxes
(started, agent up, preload imported) on an idle server, as sandboxes per second. Run it on the
host or inside ../shared/tools/run-in-vm. With no call running the background CPU cap is off
(runtime/cgroup/background_cpu.h), so this times a refill at full speed.
usage: pool_refill_bench.py BINARY STATE_DIR POOL_SIZE TIMEOUT_S
Prints one JSON line: {"binary", "pool", "ready_s": [seconds until 1, 2, ... were ready],
"per_s": sandboxes per second over the whole fill, "refill_s": one claimed and replaced}."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from warm_pool_bench import Server  # noqa: E402

binary, state, size, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
os.environ["SANDBOX_STATE_DIR"] = state
began = time.monotonic()
server = Server(binary, "--pool-size", str(size), client_name="pool-refill-bench")
ready_s, last = [], 0
while len(ready_s) < size and time.monotonic() - began < timeout:
    pool = server.pool() or {}
    while pool.get("ready", 0) > last:
        last += 1
        ready_s.append(round(time.monotonic() - began, 2))
    time.sleep(0.1)
refill_s = None
if len(ready_s) == size:
    session = server.tool("sandbox_create_session")["session_id"]
    claimed = time.monotonic()
    while time.monotonic() - claimed < timeout and (server.pool() or {}).get("ready", 0) < size:
        time.sleep(0.1)
    if (server.pool() or {}).get("ready", 0) == size:
        refill_s = round(time.monotonic() - claimed, 2)
    server.tool("sandbox_close_session", session_id=session)
server.stop()
print(json.dumps({"binary": binary, "pool": size, "ready_s": ready_s,
                  "per_s": round(len(ready_s) / ready_s[-1], 3) if ready_s else 0,
                  "refill_s": refill_s}))
