#!/usr/bin/env bash
# OAuth token validation (issue #27; a benchmark, not a test): what validating a JWT access token
# with a cached JWKS adds, side by side with a static bearer token (target <= 0.1 ms p50 on a
# warm HTTP call). Two figures: the resource server's Authenticate() alone, in a native loop
# (tests/mcp/auth/token_validation_bench.cc: RS256, ES256, EdDSA and a static token), and a warm
# HTTP call to one server that accepts both, with tokens from a real oidc-provider
# (tests/e2e/bench/oauth_latency.mjs). Prints markdown and the load average (the host may be
# shared: say so with the figures). Needs no sandbox runtime; npm for oidc-provider.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SANDBOX_BUILD_DIR:-$root/build}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '| measurement | n | p50 | p90 | p99 |'
echo '|---|---|---|---|---|'
bench=$build/tests/mcp/token_validation_bench
[ -x "$bench" ] || cmake --build "$build" --target token_validation_bench >&2 || true
if [ -x "$bench" ]; then
  # Figures in microseconds.
  "$bench" "${BENCH_OAUTH_ITERATIONS:-20000}" | sed 's/^| \(Authenticate[^|]*\)|/| \1(us) |/'
else
  echo "| Authenticate() | n/a: token_validation_bench not built | | | |"
fi
e2e=$root/tests/e2e
export MCP_SANDBOX_BIN=${MCP_SANDBOX_BIN:-$build/mcp-sandbox}
if [ ! -x "$MCP_SANDBOX_BIN" ]; then
  echo "| warm HTTP call | n/a: $MCP_SANDBOX_BIN is not built | | | |"
  exit 0
fi
stamp=$e2e/node_modules/.package-lock.sha256
want=$(sha256sum "$e2e/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd "$e2e" && npm ci --no-audit --no-fund --loglevel=error >&2) && echo "$want" >"$stamp"
fi
node=$e2e/node_modules/node/bin/node
[ -x "$node" ] || node=node
# Figures in milliseconds.
"$node" "$e2e/bench/oauth_latency.mjs" | sed 's/^| \(warm[^|]*\|JWT minus[^|]*\)|/| \1(ms) |/'
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
