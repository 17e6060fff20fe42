"""A burst over MCP stdio (tools/bench.d/burst.sh): `sessions` sandbox_create_session requests
sent at once to one `mcp-sandbox serve`, then, as soon as all have answered, every session
loops `calls` sandbox_run_python print(1) calls, all sessions at once (one request in flight
per session: the next goes when its answer is in). Prints one JSON object: the creates' and
the calls' latencies (request to response) as p50 / p99 / max in ms, and the errors.
Usage: burst_bench.py BIN [SESSIONS] [CALLS]; the server's settings come from the environment
(SANDBOX_BACKEND, SANDBOX_POOL_SIZE, SANDBOX_POOL_PRELOAD...). With a pool, the burst starts once
the pool is full."""
import json
import os
import subprocess
import sys
import time


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main():
    binary = sys.argv[1]
    sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    env = dict(os.environ, SANDBOX_MAX_SESSIONS=str(sessions + 10))
    proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env)
    ids = iter(range(1, 10**9))
    sent = {}  # request id -> (kind, session index, monotonic time sent)

    def send(method, params, kind, index):
        request_id = next(ids)
        sent[request_id] = (kind, index, time.monotonic())
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                     "params": params}).encode() + b"\n")
        proc.stdin.flush()
        return request_id

    def receive():
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("id") in sent:
                kind, index, at = sent.pop(message["id"])
                return message, kind, index, (time.monotonic() - at) * 1000

    def tool(name, **arguments):
        send("tools/call", {"name": name, "arguments": arguments}, "sync", -1)
        return receive()[0].get("result", {}).get("structuredContent", {})

    send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "burst-bench", "version": "1"}}, "sync", -1)
    receive()
    want = int(os.environ.get("SANDBOX_POOL_SIZE", "2") or 0)
    deadline = time.time() + 300
    while want > 0 and time.time() < deadline:
        pool = tool("sandbox_list_sessions").get("pool")
        if pool is None or pool["ready"] >= want:
            break
        time.sleep(0.05)

    errors = 0
    creates, runs = [], []
    ids_by_index = {}
    for index in range(sessions):
        send("tools/call", {"name": "sandbox_create_session", "arguments": {}}, "create", index)
    while len(ids_by_index) + errors < sessions:
        message, _, index, ms = receive()
        session_id = message.get("result", {}).get("structuredContent", {}).get("session_id")
        if session_id:
            ids_by_index[index] = session_id
            creates.append(ms)
        else:
            errors += 1
    left = {index: calls for index in ids_by_index}

    def call(index):
        send("tools/call", {"name": "sandbox_run_python",
                            "arguments": {"session_id": ids_by_index[index], "code": "print(1)"}},
             "run", index)

    for index in list(left):
        call(index)
    in_flight = len(left)
    while in_flight:
        message, _, index, ms = receive()
        in_flight -= 1
        runs.append(ms)
        if message.get("result", {}).get("structuredContent", {}).get("stdout") != "1\n":
            errors += 1
        left[index] -= 1
        if left[index] > 0:
            call(index)
            in_flight += 1
    proc.stdin.close()
    proc.wait(timeout=300)
    print(json.dumps({
        "creates": [percentile(creates, 0.5), percentile(creates, 0.99), max(creates or [0])],
        "calls": [percentile(runs, 0.5), percentile(runs, 0.99), max(runs or [0])],
        "n_calls": len(runs), "errors": errors}))


if __name__ == "__main__":
    main()
