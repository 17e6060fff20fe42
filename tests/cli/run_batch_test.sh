#!/usr/bin/env bash
# `mcp-sandbox run --batch` as an evaluation harness drives it (issue #41): a batch of mixed
# snippets (prints, exceptions, timeouts, a fork bomb, an OOM, a disk filler, stdin, files in
# and artifacts out, one that looks for another snippet's files, one that tries to leave a
# process behind, bad lines) runs to completion with every result right, each in a fresh
# sandbox, and leaves no process, cgroup or record behind; the same batch twice gives the same
# results. Needs root and the small image in the shared store; runs against a private state
# dir that borrows the store's images read-only.
# Usage: run_batch_test.sh /path/to/mcp-sandbox [SNIPPETS (default 100)] [namespace|docker]
# (`tests/cli/run_batch_test.sh build/mcp-sandbox 1000` is the long run of the issue.)
set -u
bin=$1
count=${2:-100}
backend=${3:-namespace}
image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
work_template=/tmp/mcp-run-batch-test.XXXXXX
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" "$image"
if [ "$backend" = docker ] && ! timeout 10 docker version >/dev/null 2>&1; then
  why="no Docker daemon answers on ${DOCKER_HOST:-unix:///var/run/docker.sock} (tools/lib/dockerd.sh start)"
  if [ "${SANDBOX_TEST_REQUIRE_DOCKER:-}" = 1 ]; then
    echo "FAILED: a Docker test could not run where the daemon is required: $why"; exit 1
  fi
  echo "SKIPPED: $why"; exit 77
fi
borrow_shared_store "$bin" "$work/state"
export SANDBOX_BACKEND=$backend SANDBOX_IMAGE=$image
# A mark no other process on the host has: the processes a snippet tries to leave carry it.
mark=$((RANDOM * 32768 + RANDOM)).5

# The batch, and what each result must be (id -> checks), from one generator.
python3 - "$count" "$mark" "$work/batch.jsonl" "$work/expect.json" <<'PY'
import json, sys

count, mark, batch_path, expect_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
lines, expect = [], {}

def add(snippet, **checks):
    lines.append(json.dumps(snippet))
    expect[str(snippet["id"])] = checks

add({"id": "exception", "code": "def f():\n    raise ValueError('boom')\nf()"},
    exit_code=1, stderr_has="ValueError: boom")
add({"id": "exit-code", "code": "raise SystemExit(3)"}, exit_code=3)
add({"id": "timeout", "code": "import time\ntime.sleep(60)", "timeout_s": 1},
    exit_code=124, timed_out=True)
# Timed out, its worker is interrupted and killed a second later; whether the worker, one of
# hundreds of processes, gets the CPU to print its KeyboardInterrupt in that second is a race
# (docs/ci.md "Batch runs"): the comparisons below take its stderr as empty either way.
add({"id": "fork-bomb", "timeout_s": 3,
     "code": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"},
    exit_code=124, timed_out=True)
add({"id": "oom", "memory": "64m",
     "code": "b = bytearray(300 << 20)\nb[::4096] = b'x' * len(b[::4096])"},
    exit_code=137, oom=True)
add({"id": "disk-filler", "shell": True,
     "code": "dd if=/dev/zero of=/mnt/data/fill bs=1M 2>/dev/null; echo dd exit $?"},
    stdout="dd exit 1\n", exit_code=0)
add({"id": "leaves-a-secret", "shell": True,
     "code": "echo secret > /mnt/data/secret.txt; echo secret > /tmp/secret.txt; echo done"},
    stdout="done\n", artifacts=["/mnt/data/secret.txt"])
add({"id": "leaves-a-process",
     "code": "import subprocess\nsubprocess.Popen(['sleep', '%s'], start_new_session=True)\n"
             "print('started')" % mark},
    stdout="started\n", exit_code=0)
add({"id": "stdin-python", "code": "print(input().upper(), input())", "stdin": "hello\nworld\n"},
    stdout="HELLO world\n", exit_code=0)
add({"id": "stdin-shell", "shell": True, "code": "tr a-z A-Z", "stdin": "shout\n"},
    stdout="SHOUT\n", exit_code=0)
add({"id": "files-in-artifact-out", "files": {"in/data.csv": "a,b\n1,2\n3,4\n"},
     "code": "rows = open('/mnt/data/in/data.csv').read().splitlines()\n"
             "open('/mnt/data/out.txt', 'w').write(str(len(rows)))\nprint(len(rows))"},
    stdout="3\n", exit_code=0, artifacts=["/mnt/data/out.txt"])
lines.append("this is not JSON")
expect[str(len(lines))] = {"ran": False, "error_has": "not a JSON object"}  # its id: its line
lines.append(json.dumps({"id": "typo", "code": "print(1)", "timeout": 5}))
expect["typo"] = {"ran": False, "error_has": "unknown field 'timeout'"}
lines.append(json.dumps({"id": "escape", "code": "print(1)", "files": {"../../etc/x": "y"}}))
expect["escape"] = {"ran": False, "error_has": "'..'"}
lines.append("")  # a blank line is skipped, not an error
lines.append(json.dumps({"id": "too-long", "code": "print(1)", "timeout_s": 100000}))
expect["too-long"] = {"ran": False, "error_has": "timeout"}
# Every earlier snippet's traces, looked for from a later sandbox: none is there.
look = ("import os\nprint(sorted(os.listdir('/mnt/data')), os.path.exists('/tmp/secret.txt'),\n"
        "      [p for p in os.listdir('/proc') if p.isdigit() and open('/proc/%s/cmdline' % p).read().find('" + mark + "') >= 0])")
add({"id": "looks-for-others", "code": look}, stdout="[] False []\n", exit_code=0)
i = 0
while len(expect) < count:
    add({"id": "print-%d" % i, "code": "print(%d * %d)" % (i, i)}, stdout="%d\n" % (i * i),
        exit_code=0, stderr="")
    i += 1
    if i % 25 == 0:
        add({"id": "looks-again-%d" % i, "code": look}, stdout="[] False []\n", exit_code=0)
open(batch_path, "w").write("\n".join(lines) + "\n")
json.dump(expect, open(expect_path, "w"))
PY

runners=()  # the pids of the runs: the Docker backend names its containers' owner by them
run_batch() {  # run_batch OUT: the batch through `run --batch`, results to OUT, stderr to OUT.err
  "$bin" run --batch "$work/batch.jsonl" --parallel 2 --timeout 20 --memory 256m \
    >"$1" 2>"$1.err" &
  pid=$!
  runners+=("$pid")
  wait "$pid"
}
started=$SECONDS
run_batch "$work/first.jsonl"
check "exit status 1: some lines could not run (the bad ones)" 1 $?
echo "     (first batch of $count: $((SECONDS - started)) s)"
tail -1 "$work/first.jsonl.err" | sed 's/^/     /'
check "the summary line counts every snippet" 1 \
  "$(grep -c "ran $((count - 4)) of $count snippets (4 not run)" "$work/first.jsonl.err")"

python3 - "$work/expect.json" "$work/first.jsonl" "$backend" <<'PY' || fail=1
import json, sys

expect = json.load(open(sys.argv[1]))
results = [json.loads(line) for line in open(sys.argv[2])]
bad = []
# What a snippet used: the fork bomb spun its CPU for its 3 s, the OOM one reached its limit
# (read from the sandbox's cgroup, on the namespace backend as root).
used = {r["id"]: (r.get("cpu_s"), r.get("memory_peak_bytes")) for r in results if r["ran"]}
if sys.argv[3] == "namespace" and not (used["fork-bomb"][0] >= 1.0 and used["oom"][1] >= 60 << 20):
    bad.append("cpu_s and memory_peak_bytes: fork-bomb %s, oom %s" % (used["fork-bomb"], used["oom"]))
ids = [str(r["id"]) for r in results]
if sorted(ids) != sorted(expect):
    bad.append("ids: missing %s, extra %s" % (sorted(set(expect) - set(ids)), sorted(set(ids) - set(expect))))
if [r["line"] for r in results] != sorted(r["line"] for r in results):
    bad.append("results not in the input's order")
for r in results:
    want = expect.get(str(r["id"]), {})
    ran = want.get("ran", True)
    problems = []
    if r["ran"] != ran:
        problems.append("ran %s" % r["ran"])
    for key in ("exit_code", "timed_out", "oom", "stdout", "stderr"):
        if key in want and r.get(key) != want[key]:
            problems.append("%s %r" % (key, r.get(key)))
    for key, field in (("stdout_has", "stdout"), ("stderr_has", "stderr"), ("error_has", "error")):
        if key in want and want[key] not in (r.get(field) or ""):
            problems.append("%s %r" % (field, r.get(field)))
    if "artifacts" in want and [a["path"] for a in r.get("artifacts", [])] != want["artifacts"]:
        problems.append("artifacts %r" % r.get("artifacts"))
    if problems:
        bad.append("%s: %s (result %s)" % (r["id"], ", ".join(problems), json.dumps(r)[:400]))
print("ok   every result is right (%d)" % len(results) if not bad else "FAIL results:\n  " + "\n  ".join(bad))
sys.exit(1 if bad else 0)
PY

run_batch "$work/second.jsonl"
same=$(python3 - "$work/first.jsonl" "$work/second.jsonl" <<'PY'
import json, sys
def load(path):  # the timings differ from run to run; nothing else may
    out = []
    for line in open(path):
        r = json.loads(line)
        for key in ("duration_s", "wall_s", "cpu_s", "memory_peak_bytes"):
            r.pop(key, None)
        if r["id"] == "fork-bomb" and r.get("stderr", "").rstrip().endswith("KeyboardInterrupt"):
            r["stderr"] = ""  # printed within the grace period, or killed first (docs/ci.md)
        out.append(r)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
for x, y in zip(a, b):  # what differs, for the log
    if x != y:
        print("     first %s\n     second %s" % (json.dumps(x)[:300], json.dumps(y)[:300]), file=sys.stderr)
print(a == b)
PY
)
check "the same batch twice gives the same results" True "$same"

# An ordinary user (the CI recipe's), here nobody with a state dir of its own borrowing the same
# images: the same results, but for the memory limit where no memory cgroup is delegated to the
# user (rlimits only: Python's MemoryError, exit 1, where a cgroup kills with 137; docs/security.md
# "Limits").
if [ "$backend" = namespace ] && command -v setpriv >/dev/null; then  # the socket is root's
  chmod 711 "$work"
  mkdir -p "$work/user/state"
  for part in images archives; do ln -s "$SANDBOX_STATE_DIR/$part" "$work/user/state/$part"; done
  cp "$work/batch.jsonl" "$work/user/batch.jsonl"
  chown -R 65534:65534 "$work/user"
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    env HOME="$work/user" SANDBOX_STATE_DIR="$work/user/state" \
    "$bin" run --batch "$work/user/batch.jsonl" --parallel 2 --timeout 20 --memory 256m \
    >"$work/user.jsonl" 2>"$work/user.err"
  check "as an ordinary user too, exit status 1 (the bad lines)" 1 $?
  same=$(python3 - "$work/first.jsonl" "$work/user.jsonl" <<'PY'
import json, sys
def load(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        for key in ("duration_s", "wall_s", "cpu_s", "memory_peak_bytes"):
            r.pop(key, None)
        if r["id"] == "oom":  # killed by the cgroup, or MemoryError under rlimits only
            r = {"id": "oom", "ran": r["ran"], "failed": r["exit_code"] in (1, 137)}
        if r["id"] == "fork-bomb" and r.get("stderr", "").rstrip().endswith("KeyboardInterrupt"):
            r["stderr"] = ""  # printed within the grace period, or killed first (docs/ci.md)
        out[str(r["id"])] = r
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
differ = sorted(k for k in a if a[k] != b.get(k))
for k in differ:  # what differs, for the log
    print("     %s: as root %s, as the user %s" % (k, json.dumps(a[k])[:300], json.dumps(b.get(k))[:300]),
          file=sys.stderr)
print(differ or "same")
PY
)
  check "and the same results" same "$same"
  check "no session record of the user left" "" "$(ls "$work/user/state/sessions" 2>/dev/null)"
fi

# Interrupted (SIGINT, as a CI job's cancel sends it) while snippets run: the runs in flight are
# cancelled and torn down, what was not started is not, and the runner exits 130.
for i in 1 2 3 4 5 6; do
  echo '{"id": "sleeper-'$i'", "code": "import subprocess\nsubprocess.Popen([\"sleep\", \"'$mark'\"], start_new_session=True)\nimport time\ntime.sleep(30)"}'
done >"$work/sleepers.jsonl"
"$bin" run --batch "$work/sleepers.jsonl" --parallel 2 >"$work/sleepers.out" 2>"$work/sleepers.err" &
pid=$!
runners+=("$pid")
for _ in $(seq 600); do  # until both first sleepers run (a minute at most)
  [ "$(pgrep -fc "sleep $mark")" -ge 2 ] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
check "an interrupted batch exits 130" 130 $?
check "its summary says so" 1 "$(grep -c "not run, interrupted" "$work/sleepers.err")"
check "the snippets cut short are reported not run" 2 "$(grep -c '"error":"cancelled' "$work/sleepers.out")"
check "and those never started not at all" 2 "$(wc -l <"$work/sleepers.out")"

# Nothing left behind: no process with the mark, no session record, no cgroup of this state dir.
check "no process left behind" "" "$(pgrep -f "sleep $mark" || true)"
check "no session record left" "" "$(ls "$SANDBOX_STATE_DIR/sessions" 2>/dev/null)"
owner=$(python3 -c '
import sys
h = 14695981039346656037
for c in sys.argv[1].rstrip("/").encode():
    h = ((h ^ c) * 1099511628211) % (1 << 64)
print("mcp-sandbox-%012x" % (h & 0xffffffffffff))' "$SANDBOX_STATE_DIR")
check "no cgroup of this state dir left" "" \
  "$(find /sys/fs/cgroup -maxdepth 3 -name "$owner" 2>/dev/null)"
check "no mount of this test left" "" "$(grep -F "$work" /proc/self/mountinfo)"
if [ "$backend" = docker ]; then
  left=$(docker ps -a --filter label=mcp-sandbox.owner --format '{{.Label "mcp-sandbox.owner"}}' |
    grep -E "/($(IFS='|'; echo "${runners[*]}"))/" || true)
  check "no container of these runs left" "" "$left"
fi
exit $fail
