#!/usr/bin/env bash
# Usage and metrics (issue #26; a benchmark, not a test): a warm sandbox_run_python p50 with
# per-call usage and metric counting on (SANDBOX_USAGE=on, the default) and off, two servers of
# each side by side in rounds, with a control group of four all on in the same rounds (target:
# within 3 %; the control's on/on ratio and the two servers of one mode give the noise floor;
# BENCH_USAGE_RUNS runs it that many times and prints the medians of the ratios), and a scrape of /metrics from a server holding 500 live sessions (target <= 10 ms),
# beside the same server with none (tests/e2e/bench/usage_overhead.mjs). Prints markdown and the
# load average (the host may be shared: say so with the figures). Needs the sandbox runtime and
# npm. BENCH_SCRAPE_SESSIONS (500; 0: the first part only) sandboxes of BENCH_SCRAPE_MEMORY (64m)
# each are started; BENCH_USAGE_CALLS (1000) calls per server. BENCH_USAGE_CONTROL=0 leaves the
# control group out.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/lib/mcp_bench_setup.sh"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '| measurement | n | p50 | p90 | p99 | note |'
echo '|---|---|---|---|---|---|'
runs=${BENCH_USAGE_RUNS:-1}
if [ "$runs" -le 1 ]; then
  "$node" "$e2e/bench/usage_overhead.mjs"
else
  # Several runs of the first part (servers started afresh each time, as their placement moves
  # them against each other), then the medians of their ratios; the scrape once after.
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  for i in $(seq "$runs"); do
    BENCH_SCRAPE_SESSIONS=0 "$node" "$e2e/bench/usage_overhead.mjs" | tee -a "$out"
  done
  median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  for name in 'on / off, p50' 'control: on / on, p50' 'on / off, paired' 'control: on / on, paired'; do
    values=$(grep -F "| $name" "$out" | awk -F'|' '{ gsub(/ /, "", $4); print $4 }')
    [ -n "$values" ] || continue
    echo "| $name: median of $runs runs | | $(echo "$values" | median) | | | range $(echo "$values" | sort -g | head -1) to $(echo "$values" | sort -g | tail -1) |"
  done
  for name in 'on / off, server CPU' 'control: on / on, server CPU'; do
    values=$(grep -F "| $name" "$out" | sed -n 's/.*difference \(-\{0,1\}[0-9.]*\) µs.*/\1/p')
    [ -n "$values" ] || continue
    echo "| $name per call, difference (µs): median of $runs runs | | $(echo "$values" | median) | | | range $(echo "$values" | sort -g | head -1) to $(echo "$values" | sort -g | tail -1) |"
  done
  if [ "${BENCH_SCRAPE_SESSIONS:-500}" != 0 ]; then
    BENCH_USAGE_SKIP_OVERHEAD=1 "$node" "$e2e/bench/usage_overhead.mjs"
  fi
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
