#!/usr/bin/env bash
# An orderly stop while the warm pool is warming a sandbox (issue #38): the stop kills that
# sandbox instead of waiting for its preload, and leaves nothing of it (no record, process,
# cgroup, mount or container). The server runs at a fiftieth of a CPU per sandbox, so the pooled
# sandbox's preload (numpy, pandas, matplotlib: a second and more of CPU) needs over a minute,
# far beyond the bound on the stop; a server that waits for the warm-up (as systemd's stop of a
# server in a slow VM once did, until its 60 s timeout) fails here. The stop is SIGTERM, as
# systemd sends it. Needs root and the default image (`python`) in the shared store.
# With `docker`, the same on the Docker backend (skipped without a daemon, or failed where
# tools/test requires the Docker half: SANDBOX_TEST_REQUIRE_DOCKER=1).
# Usage: pool_stop_test.sh /path/to/mcp-sandbox [namespace|docker]
set -u
bin=$1
backend=${2:-namespace}
root=$(cd "$(dirname "$0")/../.." && pwd)
work_template=/tmp/mcp-pool-stop-test.XXXXXX
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" python
[ "$backend" != docker ] || skip_unless_docker
borrow_shared_store "$bin" "$work/state"
export SANDBOX_LOG_LEVEL=info SANDBOX_IMAGE=python SANDBOX_BACKEND=$backend
export PYTHONPATH=$root/tests/support${PYTHONPATH:+:$PYTHONPATH}
python3 - "$bin" "$SANDBOX_STATE_DIR" "$backend" <<'PY'
import os, signal, subprocess, sys, time

import mcp_stdio
import sandbox_records

BIN, STATE, BACKEND = sys.argv[1], sys.argv[2], sys.argv[3]
# The stop's bound: the kill and teardown of one sandbox take well under a second (a few in a
# loaded emulated VM); the warm-up at a fiftieth of a CPU takes over a minute.
STOP_BOUND_S = 10
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def records():
    """The sandboxes that exist, by session id: the namespace backend's records (session id ->
    init pid), or the containers the server owns (session id -> container id)."""
    return sandbox_records.records(STATE, BACKEND, {server.proc.pid})


def cgroup_dirs(pid, name):
    """The cgroup directories of `pid` (every hierarchy, v1 and v2) that belong to the sandbox:
    those whose path has `name` (its session id; its container's id on Docker)."""
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return []
    dirs = []
    for _, controllers, path in lines:
        if name not in path:
            continue
        if controllers == "":
            mounts = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        else:
            name = controllers.replace("name=", "")
            mounts = ["/sys/fs/cgroup/" + name] + ["/sys/fs/cgroup/" + c for c in name.split(",")]
        for mount in mounts:
            if os.path.isdir(mount + path):
                dirs.append(mount + path)
                break
    return dirs


def mounts(session_id):
    """The host's mounts (the test's mount namespace) that name the sandbox's session id."""
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if session_id and session_id in line]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


server = mcp_stdio.Server(BIN, args=("--pool-size", "1", "--cpu-limit", "0.02"),
                          client_name="pool-stop-test")
# The pool starts its sandbox at once (an idle server is quiet); wait until the backend made it,
# then a little longer, so the stop falls in the warm-up (the agent's start or the preload).
# (A record's pid is 0 until the sandbox's init runs.)
deadline, found = time.monotonic() + 60, {}
while not (found and all(found.values())) and time.monotonic() < deadline:
    found = records()
    time.sleep(0.1)
pool = server.tool("sandbox_list_sessions").get("pool") or {}
check(len(found) == 1 and pool.get("starting") == 1 and pool.get("ready") == 0,
      "the pool is warming one sandbox: %s, %s" % (found, pool))
time.sleep(2)
session_id, handle = next(iter(found.items())) if found else ("", 0)
if BACKEND == "docker":
    inspected = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", handle],
                               capture_output=True, text=True)
    init_pid = int(inspected.stdout.strip() or 0)
else:
    init_pid = handle
groups = cgroup_dirs(init_pid, handle if BACKEND == "docker" else session_id) if init_pid else []
mounted = mounts(session_id)
print("     sandbox %s, init pid %s, cgroups %s, host mounts %s"
      % (session_id, init_pid, groups, mounted))
pool = server.tool("sandbox_list_sessions").get("pool") or {}
check(pool.get("ready") == 0, "still warming when the stop comes: %s" % pool)

start = time.monotonic()
server.proc.send_signal(signal.SIGTERM)
try:
    code = server.proc.wait(timeout=120)
except subprocess.TimeoutExpired:
    server.proc.kill()
    code = server.proc.wait()
took = time.monotonic() - start
check(took < STOP_BOUND_S and code == 0,
      "SIGTERM during the warm-up: the server exits 0 within %d s (exit %s after %.1f s)"
      % (STOP_BOUND_S, code, took))
check(records() == {}, "no record or container left: %s" % records())
check(init_pid == 0 or not alive(init_pid), "no process of the sandbox left")
left = [d for d in groups if os.path.isdir(d)]
check(left == [], "no cgroup of the sandbox left: %s" % left)
check(mounts(session_id) == [], "no mount of the sandbox left: %s" % mounts(session_id))

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
PY
