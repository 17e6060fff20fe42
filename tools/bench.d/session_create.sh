#!/usr/bin/env bash
# Namespace sessions: create + agent hello + print(1) through AgentClient (p50/p99 over
# $SANDBOX_BENCH_RUNS, default 100), started as `serve` starts them (the worker's byte code kept
# per image), and the same with the worker compiling worker.py at each start, warm print(1), 20
# sessions created at once, the idle PSS of a session, and what each namespace kind costs the
# kernel (ns_bench). As root on a host with a cgroup, a second run with rlimits only
# (SANDBOX_CGROUP=none) shows what joining the cgroup costs at start. Then `docker run --rm` of
# the same image (the same rootfs tree, imported) with the same limits, when a Docker daemon is
# reachable; "docker: not reachable" otherwise.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

bench=$BUILD_DIR/tests/runtime/ns_bench
cmake --build "$BUILD_DIR" --target ns_bench sandbox-init >&2
runs=${SANDBOX_BENCH_RUNS:-100}

if ! rootfs=$("$bench" --print-rootfs); then
  echo "n/a: no image rootfs (run \`mcp-sandbox image build\`, or set SANDBOX_BENCH_ROOTFS)"
  exit 0
fi
export SANDBOX_BENCH_ROOTFS=$rootfs

ns_out=$("$bench" --runs "$runs" --concurrent 20 --compiling-row)
echo "$ns_out"
ns_p50=$(sed -n 's/^| create + hello + print(1) | \([0-9.]*\) ms.*/\1/p' <<<"$ns_out")
compiling_p50=$(sed -n 's/^| create + hello + print(1), the worker compiling [^|]*| \([0-9.]*\) ms.*/\1/p' \
  <<<"$ns_out")
if [ "$(id -u)" -eq 0 ] && [ "${SANDBOX_CGROUP:-auto}" != none ] &&
   ! grep -q "cgroup mode none" <<<"$ns_out"; then
  echo
  echo "The same with rlimits only (SANDBOX_CGROUP=none), to show the cost of joining the cgroup:"
  echo
  SANDBOX_CGROUP=none "$bench" --runs "$runs" --concurrent 20 --idle 0 --compiling-row | sed -n '/^| measure/,/^$/p'
fi

echo
# A daemon answering already, or one tools/lib/dockerd.sh starts (as root; stopped again after).
dockerd_sh=$SANDBOX_ROOT/tools/lib/dockerd.sh
started_here=
if command -v docker >/dev/null && ! timeout 10 docker info >/dev/null 2>&1 &&
   [ "$(id -u)" -eq 0 ] && [ -x "$dockerd_sh" ] && ! "$dockerd_sh" status >/dev/null 2>&1; then
  "$dockerd_sh" start >&2 && started_here=1 || true
fi
cleanup() { [ -z "$started_here" ] || "$dockerd_sh" stop >&2; }
trap cleanup EXIT
if ! command -v docker >/dev/null || ! timeout 10 docker info >/dev/null 2>&1; then
  echo "docker: not reachable"
  exit 0
fi
# The same tree as an image, cached by the rootfs path.
tag=$(printf '%s' "$rootfs" | sha256sum | cut -c1-12)
image=mcp-sandbox-bench/ns-rootfs:$tag
if ! docker image inspect "$image" >/dev/null 2>&1; then
  log "importing $rootfs into docker as $image"
  tar -C "$rootfs" -c . | docker import - "$image" >&2
fi
# The limits a namespace session gets by default (runtime/limits.h), the hardening it has.
docker_args=(run --rm --network none --memory 512m --memory-swap 512m --cpus 1
  --pids-limit 256 --user 1000:1000 --read-only --cap-drop ALL
  --security-opt no-new-privileges --tmpfs /tmp:size=256m --tmpfs /mnt/data:size=1g
  "$image" python3 -c 'print(1)')
docker "${docker_args[@]}" >/dev/null  # warm-up
docker_runs=${SANDBOX_BENCH_DOCKER_RUNS:-20}
samples=()
for ((i = 1; i <= docker_runs; i++)); do
  t0=$(date +%s%N)
  out=$(docker "${docker_args[@]}")
  t1=$(date +%s%N)
  [ "$out" = 1 ] || { echo "docker run printed '$out'"; exit 1; }
  samples+=($(((t1 - t0) / 1000)))
  printf '\rdocker run %d/%d' "$i" "$docker_runs" >&2
done
printf '\n' >&2
sorted=($(printf '%s\n' "${samples[@]}" | sort -n))
pick() { local i; i=$(awk -v n="${#sorted[@]}" -v p="$1" 'BEGIN { printf "%d", p * (n - 1) + 0.5 }'); echo "${sorted[$i]}"; }
p50=$(pick 0.5)
p99=$(pick 0.99)
echo "| docker run --rm (same rootfs, same limits) python3 -c 'print(1)' | p50 | p99 | runs |"
echo "|---|---|---|---|"
awk -v a="$p50" -v b="$p99" -v n="$docker_runs" \
  'BEGIN { printf "| docker run --rm | %.1f ms | %.1f ms | %d |\n", a / 1000, b / 1000, n }'
if [ -n "$ns_p50" ]; then
  awk -v d="$p50" -v s="$ns_p50" \
    'BEGIN { printf "\nnamespace session create + print(1) is %.1fx faster than docker run --rm (p50)\n", d / 1000 / s }'
fi
if [ -n "$compiling_p50" ]; then
  awk -v d="$p50" -v s="$compiling_p50" \
    'BEGIN { printf "(%.1fx with the worker compiling worker.py at each start)\n", d / 1000 / s }'
fi
