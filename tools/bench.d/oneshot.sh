#!/usr/bin/env bash
# One-shot runs (issue #41), what a CI grader or an evaluation harness pays per snippet:
# `mcp-sandbox run FILE` of print(1), whole process, against `docker run --rm` of the same image
# with the same limits, alternated by one hyperfine run (namespace backend, then the Docker
# backend: `run --backend docker`); then throughput, snippets per second with 2 at once:
# `run --batch` of $SANDBOX_BENCH_BATCH (default 1000) print(1) snippets and of
# $SANDBOX_BENCH_PANDAS (default 200) `import pandas` snippets, against `docker run --rm` in a
# shell loop (xargs -P 2) of $SANDBOX_BENCH_DOCKER_LOOP (default 40) of each.
# Needs root, the default image in the store ($SANDBOX_BENCH_IMAGE=python-small: the small one,
# print(1) only), and a Docker daemon (started here when none answers, and stopped again).
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "n/a: the one-shot benchmark compares with docker run, which runs as root only"
  exit 0
fi
command -v hyperfine >/dev/null || ensure_packages hyperfine
command -v dockerd >/dev/null || ensure_packages docker.io
cmake --build "$BUILD_DIR" --target mcp-sandbox sandbox-init >&2
bin=$BUILD_DIR/mcp-sandbox
# The store's image ($SANDBOX_BENCH_IMAGE: python, the default, or python-small) and the same
# image in the daemon, loaded from the archive `image build` wrote.
store_image=${SANDBOX_BENCH_IMAGE:-python}
case $store_image in
  python) archive_glob=python-default-*.tar ;;
  python-small) archive_glob=python-small-small-*.tar ;;
  *) echo "n/a: SANDBOX_BENCH_IMAGE must be python or python-small"; exit 0 ;;
esac
"$bin" image ls 2>/dev/null | grep -q "^$store_image " ||
  { echo "n/a: no image '$store_image' in the store (mcp-sandbox image build)"; exit 0; }
bench_dockerd_up
state=$("$bin" image ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state_dir"])')
image=mcp-sandbox/$store_image:latest
if ! docker image inspect "$image" >/dev/null 2>&1; then
  archive=$(ls -t "$state"/archives/$archive_glob 2>/dev/null | head -n 1 || true)
  [ -n "$archive" ] || { echo "n/a: no docker archive of the image in $state/archives"; exit 0; }
  docker load -i "$archive" >&2
fi

work=$(mktemp -d /tmp/mcp-oneshot-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'print(1)' >"$work/print1.py"
# The limits `run` gives by default (--memory 512m, --cpus 1, no network).
docker_run="docker run --rm --network none --memory 512m --cpus 1 $image"
runs=${SANDBOX_BENCH_RUNS:-30}
hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$work/oneshot.json" \
  -n "mcp-sandbox run (namespace)" "$bin run --backend namespace --image $store_image $work/print1.py" \
  -n "mcp-sandbox run (docker)" "$bin run --backend docker --image $store_image $work/print1.py" \
  -n "docker run --rm" "$docker_run python3 -c print(1)" >&2
echo "| print(1), whole process | median | mean ± σ | min | runs | docker run ÷ this (median) |"
echo "|---|---|---|---|---|---|"
python3 - "$work/oneshot.json" <<'PY'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
docker = statistics.median(results[-1]["times"])
for r in results:
    t = r["times"]
    print("| %s | %.1f ms | %.1f ± %.1f ms | %.1f ms | %d | %.1fx |" % (
        r["command"], statistics.median(t) * 1e3, r["mean"] * 1e3, r["stddev"] * 1e3,
        min(t) * 1e3, len(t), docker / statistics.median(t)))
PY

# Throughput with 2 at once.
batch=${SANDBOX_BENCH_BATCH:-1000}
pandas=${SANDBOX_BENCH_PANDAS:-200}
loop=${SANDBOX_BENCH_DOCKER_LOOP:-40}
python3 - "$batch" "$pandas" "$work" <<'PY'
import json, sys
n, p, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(work + "/print1.jsonl", "w") as f:
    for i in range(n):
        f.write(json.dumps({"id": i, "code": "print(1)"}) + "\n")
with open(work + "/pandas.jsonl", "w") as f:
    for i in range(p):
        f.write(json.dumps({"id": i, "code": "import pandas\nprint(pandas.__version__)"}) + "\n")
PY
per_second() {  # per_second COUNT START_NS END_NS
  awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f", n / ((b - a) / 1e9) }'
}
batch_rate() {  # batch_rate FILE COUNT BACKEND: snippets per second of `run --batch`
  local t0 t1
  t0=$(date +%s%N)
  "$bin" run --backend "$3" --image "$store_image" --batch "$1" --parallel 2 >"$work/out.jsonl" 2>"$work/err"
  t1=$(date +%s%N)
  [ "$(grep -c '"exit_code":0' "$work/out.jsonl")" -eq "$2" ] ||
    { log "batch of $1: not every snippet exited 0"; tail -3 "$work/err" >&2; }
  per_second "$2" "$t0" "$t1"
}
docker_rate() {  # docker_rate COUNT CODE: `docker run --rm` COUNT times, 2 at once
  local t0 t1
  t0=$(date +%s%N)
  seq "$1" | xargs -P 2 -I{} $docker_run python3 -c "$2" >/dev/null
  t1=$(date +%s%N)
  per_second "$1" "$t0" "$t1"
}
echo
echo "| throughput, 2 at once | run --batch (namespace) | run --batch (docker) | docker run --rm in a loop (xargs -P 2) | namespace ÷ docker run |"
echo "|---|---|---|---|---|"
kinds=print1
[ "$store_image" = python-small ] || kinds="print1 pandas"  # the small image has no pandas
for kind in $kinds; do
  if [ $kind = print1 ]; then count=$batch; code='print(1)'; else count=$pandas; code='import pandas'; fi
  ns=$(batch_rate "$work/$kind.jsonl" "$count" namespace)
  dk=$(batch_rate "$work/$kind.jsonl" "$count" docker)
  dr=$(docker_rate "$loop" "$code")
  awk -v k="$kind" -v c="$count" -v l="$loop" -v a="$ns" -v b="$dk" -v d="$dr" 'BEGIN {
    printf "| %s (%d snippets; docker run: %d) | %.1f /s | %.1f /s | %.1f /s | %.1fx |\n",
      (k == "print1" ? "print(1)" : "import pandas"), c, l, a, b, d, a / d }'
done
