#!/usr/bin/env bash
# The gVisor backend (issue #39) beside the namespace backend, one run side by side: a one-shot
# `mcp-sandbox run` of print(1) (create, boot, print, tear down: what a fresh session costs) and
# runsc's own floor (`runsc do /bin/true`); then, inside `serve` over stdio, what a session costs
# (tools/lib/backend_server_bench.py: create + print(1), warm print(1), `import pandas` cold,
# 10,000 small files, idle memory, pandas-ready from the pool). Rows: Debian's runsc on
# $SANDBOX_GVISOR_PLATFORM (default ptrace); a newer runsc on systrap where one is kept
# ($SANDBOX_BENCH_RUNSC_NEWER, default where tests/runtime/gvisor/newer_runsc_smoke_test.sh
# keeps Debian 13's); where a daemon answers with the image loaded, the Docker backend with the
# daemon's runc, and with runsc (SANDBOX_DOCKER_RUNTIME=runsc) on the daemon at
# $SANDBOX_BENCH_RUNSC_DOCKER_HOST (default the one tests/runtime/gvisor/docker_runsc_test.sh
# starts; run that first). Needs root (the namespace backend's default path and runsc's cgroups), runsc
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
# Not `| grep -q`: under pipefail, grep's early exit can end the writer with SIGPIPE.
grep -q "^$image " <<<"$("$bin" image ls 2>/dev/null)" ||
  { echo "n/a: no image '$image' in the store (mcp-sandbox image build)"; exit 0; }
work=$(mktemp -d /tmp/mcp-gvisor-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'print(1)' >"$work/print1.py"
runs=${SANDBOX_BENCH_RUNS:-10}
export SANDBOX_POOL_SIZE=0 SANDBOX_HIBERNATE_AFTER_S=0
# Each row: a label and the environment its commands run with (env(1), so hyperfine -N runs it).
runsc_bin=${SANDBOX_RUNSC:-runsc}
platform=${SANDBOX_GVISOR_PLATFORM:-ptrace}
labels=(namespace "gvisor ($("$runsc_bin" --version | awk 'NR == 1 {print $3}'), $platform)")
envs=("SANDBOX_BACKEND=namespace" "SANDBOX_BACKEND=gvisor")
# A newer runsc on systrap beside it: $SANDBOX_BENCH_RUNSC_NEWER, default Debian 13's, where
# tests/runtime/gvisor/newer_runsc_smoke_test.sh keeps it.
newer=${SANDBOX_BENCH_RUNSC_NEWER:-$HOME/.cache/mcp-sandbox/runsc-20240729.0/usr/bin/runsc}
if [ -x "$newer" ] && [ -z "${SANDBOX_RUNSC:-}" ]; then
  labels+=("gvisor ($("$newer" --version | awk 'NR == 1 {print $3}'), systrap)")
  envs+=("SANDBOX_BACKEND=gvisor SANDBOX_RUNSC=$newer SANDBOX_GVISOR_PLATFORM=systrap")
fi
docker_has_image() {
  DOCKER_HOST=$1 timeout 30 docker image inspect mcp-sandbox/python:latest >/dev/null 2>&1
}
shared_docker=${DOCKER_HOST:-unix:///var/run/docker.sock}
if docker_has_image "$shared_docker"; then
  labels+=("docker (runc)"); envs+=("SANDBOX_BACKEND=docker DOCKER_HOST=$shared_docker")
fi
runsc_docker=${SANDBOX_BENCH_RUNSC_DOCKER_HOST:-unix:///run/mcp-sandbox-dockerd-runsc/docker.sock}
if docker_has_image "$runsc_docker" &&
  grep -q 'Runtimes:.*runsc' <<<"$(DOCKER_HOST=$runsc_docker docker info 2>/dev/null)"; then
  labels+=("docker (runsc)")
  envs+=("SANDBOX_BACKEND=docker DOCKER_HOST=$runsc_docker SANDBOX_DOCKER_RUNTIME=runsc")
fi
commands=()
for i in "${!labels[@]}"; do
  commands+=(-n "${labels[$i]}" "env ${envs[$i]} $bin run --image $image $work/print1.py")
done
hyperfine -N --style basic --warmup 1 --runs "$runs" --export-json "$work/oneshot.json" \
  "${commands[@]}" >&2

# runsc's own floor: booting a sandbox and running /bin/true in it, no Python, no sandbox-init,
# no image of ours (`runsc do` on the host's root). No backend built on this runsc and platform
# can create a sandbox faster than this.
hyperfine -N --style basic --warmup 1 --runs "$runs" --export-json "$work/floor.json" \
  -n "runsc do /bin/true" "$runsc_bin --network=none --platform=$platform do /bin/true" >&2

calls=${SANDBOX_BENCH_CALLS:-50}
for i in "${!labels[@]}"; do
  # shellcheck disable=SC2086 # each entry is several VAR=value words
  env ${envs[$i]} python3 "$SANDBOX_ROOT/tools/lib/backend_server_bench.py" "$bin" "$calls" \
    >"$work/server-$i"
done

echo "| backend | \`mcp-sandbox run\` of print(1): create, print, tear down (median) | min |"
echo "|---|---|---|"
python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
for r in json.load(open(work + "/oneshot.json"))["results"]:
    print("| %s | %.0f ms | %.0f ms |" % (r["command"], statistics.median(r["times"]) * 1e3,
                                         min(r["times"]) * 1e3))
t = json.load(open(work + "/floor.json"))["results"][0]["times"]
print("| runsc's floor: `runsc do /bin/true` | %.0f ms | %.0f ms |" % (
    statistics.median(t) * 1e3, min(t) * 1e3))
PY
echo
echo "Inside \`serve\` over stdio (tools/lib/backend_server_bench.py says what each column measures):"
echo
echo "| backend | create + print(1) | warm print(1) | import pandas, cold | 10,000 small files | idle memory a session (PSS) | pandas-ready from the pool |"
echo "|---|---|---|---|---|---|---|"
for i in "${!labels[@]}"; do
  read -r create warm pandas files memory pooled <"$work/server-$i"
  echo "| ${labels[$i]} | $create ms | $warm ms | $pandas ms | $files ms | $memory MiB | $pooled ms |"
done
