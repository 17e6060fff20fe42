#!/usr/bin/env bash
# Network egress (issue #9), side by side with the host: a 100 MB download through a session's
# egress proxy vs the same download on the host, the connection setup the proxy adds (CONNECT
# answered vs a bare TCP connect, p50 of 50), and pip installing a small wheel from a local
# PEP 503 index through the proxy (p50 of 5, pip's own time inside the sandbox). Every server is
# on this machine's loopback; the sandbox reaches it through an IP entry of the allowlist.
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
