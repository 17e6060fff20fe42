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
# The server, npm packages and Node; no sandbox is started.
bench_needs_backend=0
source "$root/tools/lib/mcp_bench_setup.sh"
# Figures in milliseconds.
"$node" "$e2e/bench/oauth_latency.mjs" | sed 's/^| \(warm[^|]*\|JWT minus[^|]*\)|/| \1(ms) |/'
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
