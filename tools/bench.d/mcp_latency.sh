#!/usr/bin/env bash
# MCP server latency (a benchmark, not a test): a warm sandbox_run_python of print(1) over
# stdio, request to response (target p50 <= 3 ms); 50 sessions x 20 calls at once over
# Streamable HTTP (target: no errors, p99 <= 50 ms). Prints markdown tables.
# Needs the sandbox runtime (a backend and the image) and npm (for the MCP SDK client).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
e2e=$root/tests/e2e
export MCP_SANDBOX_BIN=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
if [ ! -x "$MCP_SANDBOX_BIN" ]; then
  echo "n/a: $MCP_SANDBOX_BIN is not built"
  exit 0
fi
if ! "$MCP_SANDBOX_BIN" doctor --json 2>/dev/null | grep -q '"usable": true'; then
  echo "n/a: no sandbox backend on this host (mcp-sandbox doctor)"
  exit 0
fi
stamp=$e2e/node_modules/.package-lock.sha256
want=$(sha256sum "$e2e/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd "$e2e" && npm ci --no-audit --no-fund --loglevel=error >&2) && echo "$want" >"$stamp"
fi
node=$e2e/node_modules/node/bin/node
[ -x "$node" ] || node=node
"$node" "$e2e/bench/mcp_latency.mjs"
