#!/usr/bin/env bash
# MCP server latency (a benchmark, not a test): a warm sandbox_run_python of print(1) over
# stdio, request to response (target p50 <= 3 ms); 50 sessions x 20 calls at once over
# Streamable HTTP (target: no errors, p99 <= 50 ms), from the official SDK client, a minimal
# Node client, and native clients (http_load_bench: a thread and a keep-alive connection each,
# so on 2 cores the figure is the server's rather than one Node event loop's). Prints markdown.
# Needs the sandbox runtime (a backend and the image) and npm (for the MCP SDK client).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/lib/http_server_url.sh"
source "$root/tools/lib/mcp_bench_setup.sh"
"$node" "$e2e/bench/mcp_latency.mjs"

# The same HTTP load from native clients, against a server of its own.
load_bench=${SANDBOX_BUILD_DIR:-$root/build}/tests/mcp/http_load_bench
if [ ! -x "$load_bench" ]; then
  cmake --build "${SANDBOX_BUILD_DIR:-$root/build}" --target http_load_bench >&2 || true
fi
if [ -x "$load_bench" ]; then
  log=$(mktemp)
  SANDBOX_MAX_SESSIONS=60 SANDBOX_LOG_LEVEL=info SANDBOX_LOG_FILE='' \
    "$MCP_SANDBOX_BIN" serve --http 127.0.0.1:0 2>"$log" &
  server=$!
  url=$(http_server_url "$log")
  echo
  echo '| measurement | n | p50 ms | p90 ms | p99 ms | max ms | target |'
  echo '|---|---|---|---|---|---|---|'
  # Once the warm pool is full, as burst.sh does: a server that has just started still imports
  # its pool's preload, which is its start-up, not the load's.
  pool=${SANDBOX_POOL_SIZE-2}
  "$load_bench" "$url" --sessions "${BENCH_HTTP_SESSIONS:-50}" --calls "${BENCH_HTTP_CALLS:-20}" \
    --wait-pool "${pool:-0}" || true
  # Issue #12: clients stay served while 500 more connections idle or send half a head.
  "$load_bench" "$url" --sessions 10 --calls 20 --idle 500 || true
  kill -TERM "$server" 2>/dev/null
  wait "$server" 2>/dev/null || true
  rm -f "$log"
fi
