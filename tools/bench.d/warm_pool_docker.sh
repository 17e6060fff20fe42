#!/usr/bin/env bash
# The warm pool (issue #10) on the Docker backend, side by side with the namespace backend, over
# MCP stdio, request to response: "ready to run pandas" (sandbox_create_session, then a first
# cell that imports pandas and describes a DataFrame) with a pool of 2 (waiting for the refill
# between samples, so each one takes a warm sandbox) and without (--pool-size 0), and the PSS of
# an idle pooled sandbox (its init's process tree, seen from the host). warm_pool.sh has the
# full set of figures for the namespace backend. Needs root, the default image and a Docker
# daemon (started with tools/lib/dockerd.sh when none answers, and stopped again if started
# here). Prints markdown.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "n/a: runs as root only (the daemon's socket is root's)"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
source "$root/tools/lib/common.sh"
bench_dockerd_up
export SANDBOX_LOG_LEVEL=warn SANDBOX_IMAGE=python WARM_POOL_LIB=$root/tools/lib
python3 - "$bin" "${SANDBOX_BENCH_RUNS:-10}" <<'PY'
import os, sys, time

sys.path.insert(0, os.environ["WARM_POOL_LIB"])
from warm_pool_bench import Server, pct, pooled_init_pids, pss_of_tree, ready_to_run

BIN, RUNS = sys.argv[1], int(sys.argv[2])


rows = []
for backend in ("docker", "namespace"):
    warm = Server(BIN, "--pool-size", "2", backend=backend)
    warm.wait_ready(2)
    pooled = ready_to_run(warm, 2, RUNS)
    warm.wait_ready(2)
    time.sleep(1)
    pss = [pss_of_tree(pid) for pid in pooled_init_pids(warm, backend)]
    warm.stop()
    cold = Server(BIN, "--pool-size", "0", backend=backend)
    unpooled = ready_to_run(cold, 0, RUNS)
    cold.stop()
    rows.append((backend, pooled, unpooled, pss))

print("**Warm pool on Docker** (`warm_pool_docker.sh`, image `python`, %d samples each, MCP stdio "
      "request to response)\n" % RUNS)
print("| backend | create + pandas cell, pool 2: p50 / p99 | no pool: p50 / p99 | ratio (p50) "
      "| idle pooled sandbox PSS |")
print("|---|---|---|---|---|")
for backend, pooled, unpooled, pss in rows:
    print("| %s | %.1f / %.1f ms | %.0f / %.0f ms | %.0fx | %s |" % (
        backend, pct(pooled, 50), pct(pooled, 99), pct(unpooled, 50), pct(unpooled, 99),
        pct(unpooled, 50) / max(pct(pooled, 50), 1e-6),
        " / ".join("%.1f MiB" % (p / 2**20) for p in pss) or "n/a"))
PY
