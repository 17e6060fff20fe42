# Sourced by the benchmarks that drive the server through the e2e tests' Node clients
# (tools/bench.d/mcp_latency.sh, scaleout.sh): checks that the server is built and has a usable
# backend (else prints "n/a: ..." and exits 0, as every benchmark does), installs the pinned npm
# packages once per lock file, and sets $e2e (tests/e2e) and $node (Node 22 from npm, else the
# system's). Expects $root, the checkout. A benchmark that needs no sandbox (only the server's
# HTTP side) sets bench_needs_backend=0 first.
e2e=$root/tests/e2e
export MCP_SANDBOX_BIN=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
if [ ! -x "$MCP_SANDBOX_BIN" ]; then
  echo "n/a: $MCP_SANDBOX_BIN is not built"
  exit 0
fi
source "$root/tools/lib/backend_usable.sh"
if [ "${bench_needs_backend:-1}" = 1 ] && ! backend_usable "$MCP_SANDBOX_BIN"; then
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
