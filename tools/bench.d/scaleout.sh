#!/usr/bin/env bash
# Scale-out (a benchmark, not a test; issue #23): three replicas in network namespaces behind the
# HAProxy router of tools/deploy/haproxy, as tests/e2e/scaleout.test.mjs builds them. What the
# router adds to a warm sandbox_run_python (both eras, side by side with calls straight to the
# replica; target: p50 +0.3 ms, p99 +2 ms at most), how evenly it places new sessions (within
# +-1 of even), and how soon a killed replica is out of placement (3 s at most). Prints markdown.
# Needs root (network namespaces), haproxy, the sandbox runtime and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
e2e=$root/tests/e2e
export MCP_SANDBOX_BIN=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
if [ "$(id -u)" -ne 0 ]; then echo "n/a: needs root (network namespaces)"; exit 0; fi
for tool in haproxy nsenter ip; do
  command -v "$tool" >/dev/null || { echo "n/a: $tool is not installed"; exit 0; }
done
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
"$node" "$e2e/scaleout_bench.mjs"
