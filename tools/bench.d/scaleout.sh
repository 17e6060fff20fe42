#!/usr/bin/env bash
# Scale-out (a benchmark, not a test; issue #23): three replicas in network namespaces behind the
# HAProxy router of tools/deploy/haproxy, as tests/e2e/scaleout.test.mjs builds them. What the
# router adds to a warm sandbox_run_python (both eras, side by side with calls straight to the
# replica; target: p50 +0.3 ms, p99 +2 ms at most), how evenly it places new sessions (within
# +-1 of even), and how soon a killed replica is out of placement (3 s at most). Prints markdown.
# Needs root (network namespaces), haproxy, the sandbox runtime and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "n/a: needs root (network namespaces)"; exit 0; fi
for tool in haproxy nsenter ip; do
  command -v "$tool" >/dev/null || { echo "n/a: $tool is not installed"; exit 0; }
done
source "$root/tools/lib/mcp_bench_setup.sh"
"$node" "$e2e/scaleout_bench.mjs"
