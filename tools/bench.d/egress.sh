#!/usr/bin/env bash
# Network egress (issue #9), side by side with the host: a 100 MB download through a session's
# egress proxy vs the same download on the host, the connection setup the proxy adds (CONNECT
# answered vs a bare TCP connect, p50 of 50), and pip installing a small wheel from a local
# PEP 503 index through the proxy (p50 of 5, pip's own time inside the sandbox), then
# sandbox_install_packages over MCP stdio (below). Every server is on this machine's loopback;
# the sandbox reaches it through an IP entry of the allowlist.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cli=$BUILD_DIR/mcp-sandbox
[ -x "$cli" ] || cmake --build "$BUILD_DIR" --target mcp-sandbox sandbox-init >&2
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

head -c 100000000 /dev/urandom >"$work/big.bin"
python3 "$SANDBOX_ROOT/tests/support/pep503_index.py" build "$work" egress-bench==1.0 >/dev/null
python3 "$SANDBOX_ROOT/tests/support/pep503_index.py" serve "$work" --port-file "$work/port" \
  >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port=$(cat "$work/port")

cat >"$work/probe.py" <<PY
import os, socket, statistics, subprocess, sys, time, urllib.request
via_proxy = os.environ.get("HTTP_PROXY") == "http://127.0.0.1:3128"  # set in sandboxes only
os.environ["NO_PROXY"] = os.environ["no_proxy"] = ""  # the host's 127.0.0.1 is not the sandbox's
rates = []
for _ in range(3):
    t = time.monotonic()
    n = len(urllib.request.urlopen("http://127.0.0.1:$port/big.bin").read())
    rates.append(n / (time.monotonic() - t) / 1e6)
setup = []
for _ in range(50):
    t = time.monotonic()
    if via_proxy:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT 127.0.0.1:$port HTTP/1.1\r\n\r\n")
        s.recv(100)
    else:
        s = socket.create_connection(("127.0.0.1", $port))
    setup.append((time.monotonic() - t) * 1000)
    s.close()
print(f"download_mb_s {statistics.median(rates):.0f} connect_p50_ms {statistics.median(setup):.3f}")
if via_proxy:
    installs = []
    for i in range(5):
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--user", "--force-reinstall",
                        "--disable-pip-version-check", "--index-url", "http://127.0.0.1:$port/simple",
                        "egress-bench"], check=True)
        installs.append(time.monotonic() - t)
    print(f"pip_install_p50_s {statistics.median(installs):.2f}")
PY

host=$(env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy \
  python3 "$work/probe.py")
sandbox=$("$cli" run --egress-allow "127.0.0.1:$port" --memory 1g --timeout 300 - \
  <"$work/probe.py" 2>/dev/null)
echo "egress: host      $host"
echo "egress: sandbox   $sandbox"

# sandbox_install_packages of the small wheel over MCP stdio, request to response, a new session
# per sample (creating it is not timed), p50 of 9. Side by side, alternating, through the same
# server: the tool call itself (this build's pip command line), and the two runs the tool makes
# (pip as a shell run, then the cell that activates the user site) issued as two tool calls with
# the previous command line ("before") and with this build's ("after"), so the pip flags are
# compared by one method; the extra request those two-call rows pay is the same for both.
python3 - "$cli" "$port" <<'PY'
import json, os, statistics, subprocess, sys, time

cli, port = sys.argv[1], sys.argv[2]
index = f"http://127.0.0.1:{port}/simple"
server = subprocess.Popen([cli, "serve", "--egress-allow", f"127.0.0.1:{port}", "--index-url", index],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          env=dict(os.environ, SANDBOX_LOG_LEVEL="warn"))
ids = iter(range(1, 10**9))

def rpc(method, params):
    request_id = next(ids)
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                   "params": params}).encode() + b"\n")
    server.stdin.flush()
    while True:
        message = json.loads(server.stdout.readline())
        if message.get("id") == request_id:
            return message

def tool(name, **arguments):
    result = rpc("tools/call", {"name": name, "arguments": arguments}).get("result", {})
    if result.get("isError"):
        raise RuntimeError(json.dumps(result)[:400])
    return result.get("structuredContent", {})

rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "egress-bench", "version": "1"}})
common = ("python3 -m pip install --user --disable-pip-version-check --no-input "
          "--no-warn-script-location --progress-bar off")
pip = {"before": common, "after": common + " --no-warn-conflicts --no-cache-dir"}
activate = ("import importlib as _i, site as _s\n_s.addsitedir(_s.getusersitepackages())\n"
            "_i.invalidate_caches()\ndel _i, _s\n")
samples = {"tool": [], "before": [], "after": []}
for _ in range(9):
    for row in samples:
        session = tool("sandbox_create_session")["session_id"]
        start = time.monotonic()
        if row == "tool":
            tool("sandbox_install_packages", session_id=session, packages=["egress-bench"])
        else:
            out = tool("sandbox_run_command", session_id=session,
                       command=f"{pip[row]} --index-url '{index}' 'egress-bench' 2>&1")
            if out.get("exit_code") != 0:
                raise RuntimeError(json.dumps(out)[:400])
            tool("sandbox_run_python", session_id=session, code=activate)
        samples[row].append(time.monotonic() - start)
        out = tool("sandbox_run_python", session_id=session, code="import egress_bench")
        if out.get("exit_code", 0) != 0:
            raise RuntimeError(json.dumps(out)[:400])
        tool("sandbox_close_session", session_id=session)
server.stdin.close()
server.wait(timeout=60)
p50 = {row: statistics.median(v) for row, v in samples.items()}
print(f"egress: sandbox_install_packages tool call p50 {p50['tool']:.2f} s; as two calls: "
      f"previous pip flags {p50['before']:.2f} s, this build's {p50['after']:.2f} s")
print("egress: samples (s): " + "; ".join(
    f"{row} " + " ".join(f"{x:.2f}" for x in values) for row, values in samples.items()))

# The tool call on the Docker backend too, when a daemon answers (its channel is a bind-mounted
# socket instead of an inherited one).
docker = subprocess.run([cli, "doctor", "--json"], capture_output=True, text=True,
                        env=dict(os.environ, SANDBOX_BACKEND="docker"))
try:
    usable = json.loads(docker.stdout)["backend"]["usable"]
except (ValueError, KeyError):
    usable = False
if not usable:
    print("egress: docker: no usable daemon, not measured")
    sys.exit(0)
server = subprocess.Popen([cli, "serve", "--egress-allow", f"127.0.0.1:{port}", "--index-url", index],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          env=dict(os.environ, SANDBOX_LOG_LEVEL="warn", SANDBOX_BACKEND="docker"))
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "egress-bench", "version": "1"}})
docker_samples = []
for _ in range(9):
    session = tool("sandbox_create_session")["session_id"]
    start = time.monotonic()
    tool("sandbox_install_packages", session_id=session, packages=["egress-bench"])
    docker_samples.append(time.monotonic() - start)
    tool("sandbox_close_session", session_id=session)
server.stdin.close()
server.wait(timeout=60)
print(f"egress: docker: sandbox_install_packages tool call p50 "
      f"{statistics.median(docker_samples):.2f} s (samples: "
      + " ".join(f"{x:.2f}" for x in docker_samples) + ")")
PY
