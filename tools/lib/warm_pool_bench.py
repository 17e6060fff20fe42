"""What the warm-pool benchmarks (tools/bench.d/warm_pool.sh, warm_pool_docker.sh) share: an
MCP stdio client of `mcp-sandbox serve` on a chosen backend, the "ready to run pandas" sample
loop, percentiles, and the PSS of an idle pooled sandbox seen from the host."""
import json
import os
import subprocess
import time

# The first cell a model sends, near enough.
CELL = "import pandas as pd; df = pd.DataFrame({'a': range(1000)}); print(df.describe())"


class Server:
    """`mcp-sandbox serve FLAGS` over stdio (SANDBOX_BACKEND=`backend` when given)."""

    def __init__(self, binary, *flags, backend=None, client_name="warm-pool-bench"):
        env = dict(os.environ)
        if backend:
            env["SANDBOX_BACKEND"] = backend
        self.proc = subprocess.Popen([binary, "serve", *flags], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.ids = iter(range(1, 10**9))
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": client_name, "version": "1"}})

    def send(self, method, params):
        request_id = next(self.ids)
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        return request_id

    def rpc(self, method, params):
        request_id = self.send(method, params)
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

    def pool(self):
        return self.tool("sandbox_list_sessions").get("pool")

    def wait_ready(self, want):
        deadline = time.time() + 300
        while time.time() < deadline:
            pool = self.pool()
            if pool is None or pool["ready"] >= want:
                return pool
            time.sleep(0.05)

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def pct(samples, p):
    """The p-th percentile of `samples` (seconds), in ms."""
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(round(p / 100 * (len(samples) - 1))))] * 1000


def ready_to_run(server, pool, runs):
    """`runs` samples of sandbox_create_session + the first pandas cell, request to response;
    with a pool, each after the pool is full again (so each takes a warm sandbox)."""
    samples = []
    for _ in range(runs):
        if pool:
            server.wait_ready(pool)
        start = time.monotonic()
        session = server.tool("sandbox_create_session")["session_id"]
        server.tool("sandbox_run_python", session_id=session, code=CELL)
        samples.append(time.monotonic() - start)
        server.tool("sandbox_close_session", session_id=session)
    return samples


def pss_of_tree(pid):
    """The PSS of `pid` and all its descendants, in bytes."""
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


def pooled_init_pids(server, backend="namespace"):
    """Host pids of the inits of `server`'s idle pooled sandboxes (sandboxes with a record or
    a container of that server, and no session)."""
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
