#!/usr/bin/env bash
# A burst of new sessions (issue #28): 50 sessions created at once, then 20 print(1) calls each,
# all sessions at once, over MCP stdio (tools/lib/burst_bench.py: one client, a request in
# flight per session) and Streamable HTTP (http_load_bench: a thread and a keep-alive connection
# per session, its first call creating the session), on the namespace and the Docker backend,
# with the default settings (a warm pool of 2 with the preload; the burst starts once the pool is
# full) and with the pool off (SANDBOX_POOL_SIZE=0 SANDBOX_POOL_PRELOAD=), the two side by side
# in each round. Creates and calls are timed request to response. Needs root and the default
# image; the Docker rows need a daemon (tools/lib/dockerd.sh start) and are n/a without one.
# BENCH_BURST_SESSIONS, BENCH_BURST_CALLS, BENCH_BURST_ROUNDS (1), BENCH_BURST_BACKENDS
# ("namespace docker") change the shape. Prints markdown.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SANDBOX_BUILD_DIR:-$root/build}
bin=${MCP_SANDBOX_BIN:-$build/mcp-sandbox}
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "n/a: runs as root only (cgroups, the daemon's socket)"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
source "$root/tools/lib/http_server_url.sh"
load_bench=$build/tests/mcp/http_load_bench
[ -x "$load_bench" ] || cmake --build "$build" --target http_load_bench >&2
sessions=${BENCH_BURST_SESSIONS:-50}
calls=${BENCH_BURST_CALLS:-20}
export SANDBOX_LOG_LEVEL=warn SANDBOX_IMAGE=python SANDBOX_MAX_SESSIONS=$((sessions + 10))
# Each server's stop would save its fifty sessions into the shared state dir for a week.
export SANDBOX_HIBERNATE_AFTER_S=0

# One burst; prints "create_p50 create_p99 call_p50 call_p99 call_max errors".
stdio_burst() {
  python3 "$root/tools/lib/burst_bench.py" "$bin" "$sessions" "$calls" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%.1f %.1f %.1f %.1f %.1f %d" % (*r["creates"][:2], *r["calls"], r["errors"]))'
}
http_burst() {
  local log out server pool=${SANDBOX_POOL_SIZE-2}
  log=$(mktemp)
  SANDBOX_LOG_LEVEL=info SANDBOX_LOG_FILE= "$bin" serve --http 127.0.0.1:0 2>"$log" &
  server=$!
  out=$("$load_bench" "$(http_server_url "$log")" --sessions "$sessions" --calls "$calls" \
    --creates 1 --wait-pool "${pool:-0}" 2>&1) || true
  kill -TERM "$server" 2>/dev/null
  wait "$server" 2>/dev/null || true
  rm -f "$log"
  # Rows: | what | n | p50 | p90 | p99 | max | target |; then "Native clients: E error(s), S ...".
  awk -F'|' '/creates at once/ {c50=$4; c99=$6} /calls at once/ {r50=$4; r99=$6; rmax=$7}
    /^Native clients:/ {split($0, w, " "); e=w[3]+w[5]}
    END {printf "%.1f %.1f %.1f %.1f %.1f %d\n", c50, c99, r50, r99, rmax, e}' <<<"$out"
}

docker_up() {
  "$root/tools/lib/dockerd.sh" status >/dev/null 2>&1 || "$root/tools/lib/dockerd.sh" start >&2
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $sessions sessions x $calls calls"
echo
echo '| backend | transport | settings | creates p50 / p99 ms | calls p50 / p99 / max ms | errors |'
echo '|---|---|---|---|---|---|'
for round in $(seq "${BENCH_BURST_ROUNDS:-1}"); do
  for backend in ${BENCH_BURST_BACKENDS:-namespace docker}; do
    if [ "$backend" = docker ] && ! docker_up; then
      echo "| docker | | | n/a: no Docker daemon | | |"
      continue
    fi
    for transport in stdio http; do
      for settings in default "pool off"; do
        if [ "$settings" = default ]; then
          row=$(SANDBOX_BACKEND=$backend "${transport}_burst")
        else
          row=$(SANDBOX_BACKEND=$backend SANDBOX_POOL_SIZE=0 SANDBOX_POOL_PRELOAD= "${transport}_burst")
        fi
        read -r c50 c99 r50 r99 rmax errors <<<"$row"
        echo "| $backend | $transport | $settings | $c50 / $c99 | $r50 / $r99 / $rmax | $errors |"
      done
    done
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
