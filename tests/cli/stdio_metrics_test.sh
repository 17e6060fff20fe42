#!/bin/bash
# A stdio server is scraped on SANDBOX_METRICS_ADDR only: the listener answers GET /metrics in
# the Prometheus text format while the server speaks MCP on stdin/stdout, and an address that
# cannot be bound stops the server with the reason instead of serving without metrics.
set -euo pipefail
bin="$1"
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

mkfifo "$work/in"
SANDBOX_STATE_DIR="$work/state" SANDBOX_POOL_SIZE=0 SANDBOX_METRICS_ADDR=127.0.0.1:0 \
  SANDBOX_REPLICA_ID=s1 "$bin" serve <"$work/in" >"$work/out" 2>"$work/log" &
pid=$!
exec 3>"$work/in"  # stdin stays open until we close it
url="$(metrics_url "$work/log")"
[[ -n "$url" ]] || { echo "no metrics listener:"; cat "$work/log"; exit 1; }
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' >&3
echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&3
echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_list_sessions","arguments":{}}}' >&3
for _ in $(seq 100); do
  grep -q '"id":2' "$work/out" && break
  sleep 0.1
done
grep -q '"id":2' "$work/out" || { echo "no answer to the call:"; cat "$work/out" "$work/log"; exit 1; }
body="$(curl -fsS -D "$work/headers" "$url")"
grep -qi '^content-type: text/plain; version=0.0.4' "$work/headers" ||
  { echo "content type:"; cat "$work/headers"; exit 1; }
for want in 'mcp_sandbox_info{replica="s1",' \
  'mcp_sandbox_tool_calls_total{tool="sandbox_list_sessions",outcome="ok"} 1' \
  'process_open_fds '; do
  [[ "$body" == *"$want"* ]] || { echo "missing $want in:"; echo "$body"; exit 1; }
done
# stdout is the protocol's alone: nothing of the metrics went there.
if grep -q 'mcp_sandbox' "$work/out"; then echo "metrics on stdout"; exit 1; fi
exec 3>&-
wait "$pid" || { echo "serve exited with $?"; cat "$work/log"; exit 1; }
pid=""

# The port is taken: the server says so and exits non-zero.
port="${url#http://127.0.0.1:}"
port="${port%/metrics}"
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"$work/port" &
holder=$!
for _ in $(seq 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
status=0
SANDBOX_STATE_DIR="$work/state" SANDBOX_POOL_SIZE=0 SANDBOX_METRICS_ADDR="127.0.0.1:$(cat "$work/port")" \
  "$bin" serve </dev/null >/dev/null 2>"$work/log2" || status=$?
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
[[ "$status" != 0 ]] || { echo "serve started with its metrics port taken"; exit 1; }
grep -q 'bind' "$work/log2" || { echo "no reason given:"; cat "$work/log2"; exit 1; }
# A malformed address is refused by the configuration.
if SANDBOX_METRICS_ADDR=9464 "$bin" serve </dev/null >/dev/null 2>"$work/log3"; then
  echo "SANDBOX_METRICS_ADDR=9464 was accepted"; exit 1
fi
grep -q 'SANDBOX_METRICS_ADDR' "$work/log3" || { echo "no reason given:"; cat "$work/log3"; exit 1; }
echo "ok"
