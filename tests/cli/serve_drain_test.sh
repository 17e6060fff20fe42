#!/bin/bash
# serve --http as a replica: /readyz answers without a token and names the replica, log lines
# carry it, and the first SIGTERM drains (a "drain:" line) and exits 0; without
# SANDBOX_DRAIN_TIMEOUT_S the first SIGTERM stops at once, as it always did.
set -euo pipefail
bin="$1"
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

# Starts the server with the given environment; sets pid and port (from its log line).
start() {
  : >"$work/log"
  env SANDBOX_STATE_DIR="$work/state" SANDBOX_POOL_SIZE=0 SANDBOX_AUTH_TOKEN=new,old "$@" \
    "$bin" serve --http 127.0.0.1:0 2>"$work/log" &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port="$(sed -n 's#.*listening on http://127.0.0.1:\([0-9]*\)/mcp.*#\1#p' "$work/log")"
    [[ -n "$port" ]] && return 0
    sleep 0.1
  done
  echo "server did not start:"; cat "$work/log"; exit 1
}

# Waits (at most 10 s) for the server to exit; sets status to its exit status.
stopped() {
  status="still running"
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null || [[ "$(ps -o stat= -p "$pid")" == Z* ]]; then
      status=0
      wait "$pid" || status=$?
      pid=""
      return 0
    fi
    sleep 0.1
  done
}

start SANDBOX_REPLICA_ID=r1 SANDBOX_DRAIN_TIMEOUT_S=30 SANDBOX_DRAIN_IDLE_S=1
ready="$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port/readyz")"
[[ "$ready" == *'"replica":"r1"'* && "$ready" == *'"status":"ready"'* && "$ready" == *' 200' ]] ||
  { echo "readyz: $ready"; exit 1; }
grep -q '\[r1\] listening on' "$work/log" || { echo "log lines do not name the replica:"; cat "$work/log"; exit 1; }
kill -TERM "$pid"
stopped
[[ "$status" == 0 ]] || { echo "drain exit: $status"; cat "$work/log"; exit 1; }
grep -q 'drain: signal Terminated' "$work/log" || { echo "no drain line:"; cat "$work/log"; exit 1; }
grep -q 'drain: no session left' "$work/log" || { echo "no drain end:"; cat "$work/log"; exit 1; }

start
kill -TERM "$pid"
stopped
[[ "$status" == 0 ]] || { echo "stop exit: $status"; cat "$work/log"; exit 1; }
if grep -q 'drain:' "$work/log"; then echo "a single host drained:"; cat "$work/log"; exit 1; fi
echo "ok"
