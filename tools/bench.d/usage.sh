#!/usr/bin/env bash
# Usage and metrics (issue #26; a benchmark, not a test): a warm sandbox_run_python p50 with
# per-call usage and metric counting on (SANDBOX_USAGE=on, the default) and off, side by side in
# alternating rounds (target: within 3 %), and a scrape of /metrics from a server holding 500
# live sessions (target <= 10 ms), beside the same server with none
# (tests/e2e/bench/usage_overhead.mjs). Prints markdown and the load average (the host may be
# shared: say so with the figures). Needs the sandbox runtime and npm.
# BENCH_SCRAPE_SESSIONS (500) sandboxes of BENCH_SCRAPE_MEMORY (64m) each are started.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/lib/mcp_bench_setup.sh"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '| measurement | n | p50 | p90 | p99 | note |'
echo '|---|---|---|---|---|---|'
"$node" "$e2e/bench/usage_overhead.mjs"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
