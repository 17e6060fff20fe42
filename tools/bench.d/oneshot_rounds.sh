#!/usr/bin/env bash
# One-shot runs (issue #41), before and after a change, on a noisy host: `mcp-sandbox run` of
# print(1) by each binary given and `docker run --rm` of the same image with the same limits,
# each command once per round, in turn, for $SANDBOX_BENCH_ROUNDS rounds (default 20), so a
# change of the host's load falls on every command alike. Prints, per command, the median wall
# time, the median CPU and docker run's median wall ÷ this; and the load average before and
# after. CPU: `perf stat -e task-clock` of a second run of each command in the round (every
# process it starts, the sandbox's included, waited for or not; for docker run only the client,
# not the daemon); without perf, wait4's rusage of the wall-clock run (processes nobody waited
# for, like a sandbox's killed Python, are missing from it).
# Usage: oneshot_rounds.sh [BINARY...]   (default: this build's mcp-sandbox)
# Needs root, the image in the store ($SANDBOX_BENCH_IMAGE, default python) and in the Docker
# daemon (tools/bench.d/oneshot.sh loads it), and a daemon that answers.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "n/a: the comparison with docker run runs as root only"
  exit 0
fi
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=("$BUILD_DIR/mcp-sandbox")
image=${SANDBOX_BENCH_IMAGE:-python}
docker image inspect "mcp-sandbox/$image:latest" >/dev/null 2>&1 ||
  { echo "n/a: mcp-sandbox/$image:latest is not in the Docker daemon (run oneshot.sh once)"; exit 0; }
work=$(mktemp -d /tmp/mcp-oneshot-rounds.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'print(1)' >"$work/print1.py"

python3 - "$image" "$work/print1.py" "${SANDBOX_BENCH_ROUNDS:-20}" "${binaries[@]}" <<'PY'
import os, shutil, statistics, subprocess, sys, time
image, snippet, rounds, binaries = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
commands = [(b, [b, "run", "--backend", "namespace", "--image", image, snippet]) for b in binaries]
commands.append(("docker run --rm", ["docker", "run", "--rm", "--network", "none", "--memory",
                                     "512m", "--cpus", "1", "mcp-sandbox/%s:latest" % image,
                                     "python3", "-c", "print(1)"]))

perf = shutil.which("perf")

def once(argv):
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s exited %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    if not perf:
        return wall, usage.ru_utime + usage.ru_stime
    counted = subprocess.run([perf, "stat", "-x,", "-e", "task-clock", "--"] + argv,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = [l for l in counted.stderr.splitlines() if "task-clock" in l]
    return wall, float(lines[-1].split(",")[0]) / 1e3

for _, argv in commands:  # warm-up: caches, the probes' pass, the kept seccomp program
    once(argv)
load_before = os.getloadavg()[0]
walls = {name: [] for name, _ in commands}
cpus = {name: [] for name, _ in commands}
for _ in range(rounds):
    for name, argv in commands:
        wall, cpu = once(argv)
        walls[name].append(wall)
        cpus[name].append(cpu)
load_after = os.getloadavg()[0]
docker = statistics.median(walls["docker run --rm"])
print("%d rounds, load average %.1f before, %.1f after; CPU by %s" % (
    rounds, load_before, load_after, "perf stat (task-clock)" if perf else "wait4's rusage"))
print("| print(1), whole process | median wall | median CPU | docker run ÷ this (median) |")
print("|---|---|---|---|")
for name, _ in commands:
    wall = statistics.median(walls[name])
    print("| %s | %.1f ms | %.1f ms | %.1fx |" % (name, wall * 1e3,
                                                 statistics.median(cpus[name]) * 1e3, docker / wall))
PY
