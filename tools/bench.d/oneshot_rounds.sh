#!/usr/bin/env bash
# One-shot runs (issue #41), before and after a change, on a noisy host: `mcp-sandbox run` of
# print(1) by each binary given and `docker run --rm` of the same image with the same limits,
# each command once per round, in turn, for $SANDBOX_BENCH_ROUNDS rounds (default 20), so a
# change of the host's load falls on every command alike. Prints, per command, the median wall
# time, the median CPU and docker run's median wall ÷ this; and the load average before and
# after. CPU: `perf stat -e task-clock` of a second run of each command in the round (every
# process it starts, the sandbox's included, waited for or not; for docker run only the client,
# not the daemon); without perf, wait4's rusage of the wall-clock run (processes nobody waited
# for, like a sandbox's killed Python, are missing from it). Each mcp-sandbox binary runs once
# untimed right before its timed runs: the probes' kept pass and the kept seccomp program are
# tied to the binary, one of each per state dir and user (docs/ci.md), so two binaries in turn
# evict each other's and every run would probe and compile again (about 4 ms of CPU a run more
# here), which a CI job calling one binary does not pay.
# Then batches: `run --batch` of $SANDBOX_BENCH_ROUNDS_BATCH (default 200; 0: none) print(1)
# snippets with --parallel 2 by each binary, and `docker run --rm` of print(1) in a loop with 2 at
# once ($SANDBOX_BENCH_DOCKER_LOOP times, default 20), each once per round, in turn, for
# $SANDBOX_BENCH_BATCH_ROUNDS rounds (default 3): median snippets per second, median CPU per
# snippet (perf stat over the whole batch: the runner and every sandbox) and the loop's rate ÷.
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

def once(argv, warm):
    if warm:  # this binary's kept probe pass and seccomp program (the other binary evicted them)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
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

warm = {name: len(binaries) > 1 and name in binaries for name, _ in commands}
for name, argv in commands:  # warm-up: caches, the probes' pass, the kept seccomp program
    once(argv, warm[name])
load_before = os.getloadavg()[0]
walls = {name: [] for name, _ in commands}
cpus = {name: [] for name, _ in commands}
for _ in range(rounds):
    for name, argv in commands:
        wall, cpu = once(argv, warm[name])
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

batch=${SANDBOX_BENCH_ROUNDS_BATCH:-200}
[ "$batch" -gt 0 ] || exit 0
python3 - "$image" "$work" "$batch" "${SANDBOX_BENCH_BATCH_ROUNDS:-3}" \
  "${SANDBOX_BENCH_DOCKER_LOOP:-20}" "${binaries[@]}" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
image, work = sys.argv[1], sys.argv[2]
count, rounds, loop = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
binaries = sys.argv[6:]
snippets = os.path.join(work, "print1.jsonl")
with open(snippets, "w") as f:
    for i in range(count):
        f.write(json.dumps({"id": i, "code": "print(1)"}) + "\n")
perf = shutil.which("perf")
docker = ["docker", "run", "--rm", "--network", "none", "--memory", "512m", "--cpus", "1",
          "mcp-sandbox/%s:latest" % image, "python3", "-c", "'print(1)'"]


def timed(argv, n):
    """(snippets per second, CPU seconds a snippet or None, stdout) of one whole command."""
    prefix = ([perf, "stat", "-x,", "-e", "task-clock", "-o", work + "/perf.txt", "--"]
              if perf else [])
    start = time.perf_counter()
    done = subprocess.run(prefix + argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit("%s exited %d" % (" ".join(argv), done.returncode))
    cpu = None
    if perf:
        lines = [l for l in open(work + "/perf.txt") if "task-clock" in l]
        cpu = float(lines[-1].split(",")[0]) / 1e3 / n
    return n / wall, cpu, done.stdout


commands = [(b, [b, "run", "--backend", "namespace", "--image", image, "--batch", snippets,
                 "--parallel", "2"], count) for b in binaries]
commands.append(("docker run --rm (xargs -P 2)",
                 ["sh", "-c", "seq %d | xargs -P 2 -I{} %s >/dev/null" % (loop, " ".join(docker))],
                 loop))
load_before = os.getloadavg()[0]
rates = {name: [] for name, _, _ in commands}
cpus = {name: [] for name, _, _ in commands}
for _ in range(rounds):
    for name, argv, n in commands:
        rate, cpu, out = timed(argv, n)
        if n == count and name in binaries and out.count(b'"exit_code":0') != count:
            sys.exit("%s: not every snippet exited 0" % name)
        rates[name].append(rate)
        if cpu is not None:
            cpus[name].append(cpu)
load_after = os.getloadavg()[0]
loop_rate = statistics.median(rates[commands[-1][0]])
print()
print("%d rounds of %d print(1) snippets with --parallel 2 (docker run: %d), load average %.1f "
      "before, %.1f after; CPU by %s" % (rounds, count, loop, load_before, load_after,
                                         "perf stat (task-clock)" if perf else "n/a"))
print("| batch of print(1), 2 at once | median snippets/s | median CPU a snippet "
      "| ÷ docker run loop |")
print("|---|---|---|---|")
for name, _, _ in commands:
    cpu = "%.1f ms" % (statistics.median(cpus[name]) * 1e3) if cpus[name] else "n/a"
    rate = statistics.median(rates[name])
    print("| %s | %.1f /s | %s | %.1fx |" % (name, rate, cpu, rate / loop_rate))
PY
