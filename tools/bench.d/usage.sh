#!/usr/bin/env bash
# Usage and metrics (issue #26; a benchmark, not a test): a warm sandbox_run_python p50 with
# per-call usage and metric counting on (SANDBOX_USAGE=on, the default) and off, two servers of
# each side by side in rounds (target: within 3 %; the two servers of one mode give the noise
# floor), and a scrape of /metrics from a server holding 500 live sessions (target <= 10 ms),
# beside the same server with none (tests/e2e/bench/usage_overhead.mjs). Prints markdown and the
# load average (the host may be shared: say so with the figures). Needs the sandbox runtime and
# npm. BENCH_SCRAPE_SESSIONS (500; 0: the first part only) sandboxes of BENCH_SCRAPE_MEMORY (64m)
# each are started; BENCH_USAGE_CALLS (1000) calls per server. BENCH_USAGE_CONTROL=1 runs the
# two "off" servers with usage on too: the ratio an identical pair gives (the control).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/lib/mcp_bench_setup.sh"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${BENCH_USAGE_CONTROL:-0}" = 1 ]; then echo "control run: all four servers with usage on"; fi
echo
echo '| measurement | n | p50 | p90 | p99 | note |'
echo '|---|---|---|---|---|---|'
"$node" "$e2e/bench/usage_overhead.mjs"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
