#!/usr/bin/env bash
# Rolling restart (a benchmark, not a test; issue #36): three replicas in network namespaces behind
# the HAProxy router of tools/deploy/haproxy, as tests/e2e/scaleout.test.mjs builds them, with
# hibernation on (the shipped default) and a drain. Each replica in turn gets SIGTERM, drains
# (idle sessions hibernated), exits and starts again under its id, while 20 clients of both eras
# call their sessions. Calls failed (goal 0), the p99 added during the restart, the resume of a
# session whose replica restarted, sessions kept / sessions before. Prints markdown.
# Needs root (network namespaces), haproxy, the sandbox runtime and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "n/a: needs root (network namespaces)"; exit 0; fi
for tool in haproxy nsenter ip; do
  command -v "$tool" >/dev/null || { echo "n/a: $tool is not installed"; exit 0; }
done
source "$root/tools/lib/mcp_bench_setup.sh"
"$node" "$e2e/rolling_restart_bench.mjs"
