#!/usr/bin/env bash
# The warm pool (issue #10) on the Docker backend, side by side with the namespace backend, over
# MCP stdio, request to response: "ready to run pandas" (sandbox_create_session, then a first
# cell that imports pandas and describes a DataFrame) with a pool of 2 (waiting for the refill
# between samples, so each one takes a warm sandbox) and without (--pool-size 0), and the PSS of
# an idle pooled sandbox (its init's process tree, seen from the host). warm_pool.sh has the
# full set of figures for the namespace backend. Needs root, the default image and a Docker
# daemon (started with tools/lib/dockerd.sh when none answers, and stopped again if started
# here). Prints markdown.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "n/a: runs as root only (the daemon's socket is root's)"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
dockerd_sh=$root/tools/lib/dockerd.sh
started_here=
if ! "$dockerd_sh" status >/dev/null 2>&1; then
  "$dockerd_sh" start >&2 || { echo "n/a: no Docker daemon could be started"; exit 0; }
  started_here=1
fi
cleanup() { [ -z "$started_here" ] || "$dockerd_sh" stop >&2; }
trap cleanup EXIT
export SANDBOX_LOG_LEVEL=warn SANDBOX_IMAGE=python
python3 - "$bin" "${SANDBOX_BENCH_RUNS:-10}" <<'PY'
import json, os, subprocess, sys, time

BIN, RUNS = sys.argv[1], int(sys.argv[2])
CELL = "import pandas as pd; df = pd.DataFrame({'a': range(1000)}); print(df.describe())"


class Server:
    def __init__(self, backend, *flags):
        env = dict(os.environ, SANDBOX_BACKEND=backend)
        self.proc = subprocess.Popen([BIN, "serve", *flags], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.ids = iter(range(1, 10**9))
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "warm-pool-docker-bench", "version": "1"}})

    def rpc(self, method, params):
        request_id = next(self.ids)
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == request_id:
                return message

    def tool(self, name, **arguments):
        answer = self.rpc("tools/call", {"name": name, "arguments": arguments})
        result = answer.get("result", {})
        if result.get("isError"):
            raise RuntimeError(json.dumps(answer)[:400])
        return result.get("structuredContent", {})

    def wait_ready(self, want):
        deadline = time.time() + 300
        while time.time() < deadline:
            pool = self.tool("sandbox_list_sessions").get("pool")
            if pool is None or pool["ready"] >= want:
                return pool
            time.sleep(0.05)

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def pct(samples, p):
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(round(p / 100 * (len(samples) - 1))))] * 1000


def ready_to_run(server, pool):
    samples = []
    for _ in range(RUNS):
        if pool:
            server.wait_ready(pool)
        start = time.monotonic()
        session = server.tool("sandbox_create_session")["session_id"]
        server.tool("sandbox_run_python", session_id=session, code=CELL)
        samples.append(time.monotonic() - start)
        server.tool("sandbox_close_session", session_id=session)
    return samples


def pss_of_tree(pid):
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return total


def pooled_init_pids(server, backend):
    """Host pids of the inits of the idle pooled sandboxes of `server`."""
    sessions = {s["session_id"] for s in server.tool("sandbox_list_sessions")["sessions"]}
    pids = []
    if backend == "docker":
        listed = subprocess.run(
            ["docker", "ps", "--filter", "label=mcp-sandbox.session", "--format",
             '{{.ID}} {{.Label "mcp-sandbox.session"}} {{.Label "mcp-sandbox.owner"}}'],
            capture_output=True, text=True).stdout
        for line in listed.splitlines():
            container, session, owner = (line.split(" ") + ["", ""])[:3]
            fields = owner.split("/")  # "<boot id>/<pid namespace>/<pid>/<start time>"
            if len(fields) == 4 and fields[2] == str(server.proc.pid) and session not in sessions:
                pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", container],
                                     capture_output=True, text=True).stdout.strip()
                pids.append(int(pid or 0))
        return pids
    state = os.environ.get("SANDBOX_STATE_DIR", "/var/lib/mcp-sandbox")
    for name in os.listdir(os.path.join(state, "sessions")):
        try:
            with open(os.path.join(state, "sessions", name)) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if record.get("server_pid") == server.proc.pid and name[:-5] not in sessions:
            pids.append(record["pid"])
    return pids


rows = []
for backend in ("docker", "namespace"):
    warm = Server(backend, "--pool-size", "2")
    warm.wait_ready(2)
    pooled = ready_to_run(warm, 2)
    warm.wait_ready(2)
    time.sleep(1)
    pss = [pss_of_tree(pid) for pid in pooled_init_pids(warm, backend)]
    warm.stop()
    cold = Server(backend, "--pool-size", "0")
    unpooled = ready_to_run(cold, 0)
    cold.stop()
    rows.append((backend, pooled, unpooled, pss))

print("**Warm pool on Docker** (`warm_pool_docker.sh`, image `python`, %d samples each, MCP stdio "
      "request to response)\n" % RUNS)
print("| backend | create + pandas cell, pool 2: p50 / p99 | no pool: p50 / p99 | ratio (p50) "
      "| idle pooled sandbox PSS |")
print("|---|---|---|---|---|")
for backend, pooled, unpooled, pss in rows:
    print("| %s | %.1f / %.1f ms | %.0f / %.0f ms | %.0fx | %s |" % (
        backend, pct(pooled, 50), pct(pooled, 99), pct(unpooled, 50), pct(unpooled, 99),
        pct(unpooled, 50) / max(pct(pooled, 50), 1e-6),
        " / ".join("%.1f MiB" % (p / 2**20) for p in pss) or "n/a"))
PY
