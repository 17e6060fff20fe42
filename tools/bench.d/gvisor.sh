#!/usr/bin/env bash
# The gVisor backend (issue #39) beside the namespace backend, one run side by side: a one-shot
# `mcp-sandbox run` of print(1) (create, boot, print, tear down: what a fresh session costs), then
# a warm print(1) in a live session of `serve` over stdio (the agent round trip plus the Sentry's
# system calls). Needs root (the namespace backend's default path and runsc's cgroups), runsc
# (`apt-get install runsc`) and the image in the store ($SANDBOX_BENCH_IMAGE, default python).
# Prints markdown.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "n/a: the gVisor benchmark runs as root"
  exit 0
fi
command -v runsc >/dev/null || { echo "n/a: no runsc (apt-get install runsc)"; exit 0; }
command -v hyperfine >/dev/null || ensure_packages hyperfine
cmake --build "$BUILD_DIR" --target mcp-sandbox sandbox-init >&2
bin=$BUILD_DIR/mcp-sandbox
image=${SANDBOX_BENCH_IMAGE:-python}
"$bin" image ls 2>/dev/null | grep -q "^$image " ||
  { echo "n/a: no image '$image' in the store (mcp-sandbox image build)"; exit 0; }
work=$(mktemp -d /tmp/mcp-gvisor-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'print(1)' >"$work/print1.py"
runs=${SANDBOX_BENCH_RUNS:-10}
export SANDBOX_POOL_SIZE=0 SANDBOX_HIBERNATE_AFTER_S=0
hyperfine -N --style basic --warmup 1 --runs "$runs" --export-json "$work/oneshot.json" \
  -n "namespace" "$bin run --backend namespace --image $image $work/print1.py" \
  -n "gvisor ($(runsc --version | head -n 1 | awk '{print $3}'), ${SANDBOX_GVISOR_PLATFORM:-ptrace})" \
  "$bin run --backend gvisor --image $image $work/print1.py" >&2

calls=${SANDBOX_BENCH_CALLS:-50}
for backend in namespace gvisor; do
  SANDBOX_BACKEND=$backend python3 - "$bin" "$calls" "$SANDBOX_ROOT/tests/support" >"$work/warm-$backend" <<'PY'
import statistics, sys, time
sys.path.insert(0, sys.argv[3])
from mcp_stdio import Server
server = Server(sys.argv[1])
sid = server.tool("sandbox_create_session")["session_id"]
server.tool("sandbox_run_python", session_id=sid, code="print(1)")  # the worker is warm
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    server.tool("sandbox_run_python", session_id=sid, code="print(1)")
    times.append(time.perf_counter() - start)
server.tool("sandbox_close_session", session_id=sid)
print("%.1f %.1f" % (statistics.median(times) * 1e3, min(times) * 1e3))
PY
done

echo "| backend | create + print(1) + teardown (run, median) | min | warm print(1) (median) | min |"
echo "|---|---|---|---|---|"
python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
results = json.load(open(work + "/oneshot.json"))["results"]
for r, backend in zip(results, ["namespace", "gvisor"]):
    warm_median, warm_min = open("%s/warm-%s" % (work, backend)).read().split()
    t = r["times"]
    print("| %s | %.0f ms | %.0f ms | %s ms | %s ms |" % (
        r["command"], statistics.median(t) * 1e3, min(t) * 1e3, warm_median, warm_min))
PY
