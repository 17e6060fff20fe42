#!/usr/bin/env bash
# Hibernate and resume (docs/sessions.md "Hibernate, resume, fork"), over MCP stdio, on the backend doctor
# picks, with the warm pool of 2: a session with a small state and one holding a ~100 MB
# DataFrame, side by side.
#   resume      request to response of the first call after the session hibernated (print(1)),
#               each after the pool is full again; and the server's own figure from its log
#               ("resumed in N ms": saved state read and checked, sandbox taken, state restored),
#               with its phases (debug log): the archive written into the sandbox, restored there
#   hibernate   the server's figure ("hibernated in N ms": from the idle time-out firing to the
#               sandbox stopped), with its phases: the state saved in the sandbox, the archive
#               read out over the agent protocol; the rest is the store (SHA-256, write, fsync)
#               and the sandbox's stop
#   memory      what the session's sandbox held just before (PSS of the processes in its cgroup)
#               and after hibernation (processes left in it; its cgroup gone)
#   1,000       one small session hibernated, then forked 999 times (a fork of a hibernated
#               session copies its saved files: no sandbox), so 1,000 really exist: their disk
#               (du), the server's RSS before and after, sandbox_list_sessions with all of them
# Runs in a state dir of its own (the image store is the shared one, through a symlink), removed
# at the end, so no other saved session is evicted or counted. Prints markdown and the load
# average (the figures are only as quiet as the host). Needs root and the python image (with
# python3-dill).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MCP_SANDBOX_BIN:-${SANDBOX_BUILD_DIR:-$root/build}/mcp-sandbox}
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "n/a: needs root (the session's cgroup is read from /proc)"; exit 0; }
store=${SANDBOX_STATE_DIR:-/var/lib/mcp-sandbox}
state=$(mktemp -d /tmp/mcp-bench-hibernate.XXXXXX)
# SANDBOX_BENCH_LOG=FILE keeps the server's log (its timings) there.
trap '[ -z "${SANDBOX_BENCH_LOG:-}" ] || cp "$state/server.log" "$SANDBOX_BENCH_LOG"; rm -rf "$state"' EXIT
ln -s "$store/images" "$state/images"
export SANDBOX_STATE_DIR=$state SANDBOX_LOG_LEVEL=debug SANDBOX_LOG_FILE=$state/server.log
export SANDBOX_IMAGE=python WARM_POOL_LIB=$root/tools/lib
python3 - "$bin" "${SANDBOX_BENCH_RUNS:-10}" <<'PY'
import glob, os, re, statistics, subprocess, sys, time

sys.path.insert(0, os.environ["WARM_POOL_LIB"])
from warm_pool_bench import Server, pct

BIN, RUNS = sys.argv[1], int(sys.argv[2])
STATE, LOG = os.environ["SANDBOX_STATE_DIR"], os.environ["SANDBOX_LOG_FILE"]
IDLE_S = 1.0
SMALL = "x = 1\ns = 'text'\ndef f(v):\n    return v + x\n"
LARGE = ("import numpy as np, pandas as pd\n"
         "df = pd.DataFrame(np.random.rand(1_300_000, 10))\n")  # 104 MB of float64


def status(server, sid):
    return server.tool("sandbox_session_status", session_id=sid)


def in_cgroup(sid):
    """Host pids whose cgroup names the session (the namespace backend's cgroup is its id)."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and sid in open("/proc/%s/cgroup" % entry).read():
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def pss(pids):
    total = 0
    for pid in pids:
        try:
            for line in open("/proc/%d/smaps_rollup" % pid):
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def logged(what, sid):
    """The server's "session <sid> <what> in N ms" figure, waiting for the line to be written."""
    pattern = re.compile(r"session %s %s in (\d+) ms" % (sid, what))
    for _ in range(200):
        found = pattern.findall(open(LOG).read())
        if found:
            return int(found[-1]) / 1000
        time.sleep(0.01)
    return float("nan")


# runtime/session/session_hibernation.cc's debug lines: where a save's and a restore's time goes.
SAVE_PHASES = re.compile(r"saved in the sandbox in (\d+) ms, \d+ bytes read out in (\d+) ms")
RESTORE_PHASES = re.compile(r"bytes written into the sandbox in (\d+) ms, restored in (\d+) ms")
# runtime/session/saved_sessions.cc's: the archive stored (digest, write, fsync) and loaded back.
STORED = r"saved session %s: \d+ bytes stored \(digest, eviction, written and synced\) in (\d+) ms"
LOADED = r"saved session %s: \d+ bytes loaded and checked in (\d+) ms"


def phases(pattern, mark):
    """The phase timings (seconds) of the first such line written after offset `mark`."""
    found = pattern.findall(open(LOG).read()[mark:])
    if not found:
        return [float("nan")] * pattern.groups
    return [int(ms) / 1000 for ms in (found[0] if pattern.groups > 1 else [found[0]])]


def cgroup_dirs(sid):
    return glob.glob("/sys/fs/cgroup/**/*%s*" % sid, recursive=True)


def measure(server, setup, runs):
    rows = {"hibernate": [], "save": [], "read": [], "store": [], "resume": [],
            "resume_server": [], "load": [], "write": [], "restore": [], "saved": 0, "live_pss": [], "left_procs": 0,
            "left_cgroups": 0}
    for _ in range(runs):
        server.wait_ready(2)
        sid = server.tool("sandbox_run_python", code=setup)["session_id"]
        rows["live_pss"].append(pss(in_cgroup(sid)))
        mark = len(open(LOG).read())
        while status(server, sid)["state"] != "hibernated":
            time.sleep(0.02)
        rows["hibernate"].append(logged("hibernated", sid))
        save, read = phases(SAVE_PHASES, mark)
        rows["save"].append(save)
        rows["read"].append(read)
        rows["store"] += phases(re.compile(STORED % sid), mark)
        rows["saved"] = status(server, sid).get("saved_bytes", 0)
        rows["left_procs"] += len(in_cgroup(sid))
        rows["left_cgroups"] += len(cgroup_dirs(sid))
        server.wait_ready(2)
        mark = len(open(LOG).read())
        start = time.monotonic()
        server.tool("sandbox_run_python", session_id=sid, code="print(1)")
        rows["resume"].append(time.monotonic() - start)
        rows["resume_server"].append(logged("resumed", sid))
        write, restore = phases(RESTORE_PHASES, mark)
        rows["write"].append(write)
        rows["restore"].append(restore)
        rows["load"] += phases(re.compile(LOADED % sid), mark)
        server.tool("sandbox_close_session", session_id=sid)
    return rows


def rss(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def du(paths, apparent):
    flags = ["-scb"] if apparent else ["-sc", "-B1"]
    out = subprocess.run(["du", *flags, *paths], capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1].split()[0])


def thousand(server):
    server.wait_ready(2)
    rss_before = rss(server.proc.pid)
    sid = server.tool("sandbox_run_python", code=SMALL)["session_id"]
    while status(server, sid)["state"] != "hibernated":
        time.sleep(0.02)
    start = time.monotonic()
    forks = [server.tool("sandbox_fork_session", session_id=sid)["session_id"] for _ in range(999)]
    fork_s = (time.monotonic() - start) / len(forks)
    ids = [sid] + forks
    dirs = [os.path.join(STATE, "hibernated", i) for i in ids]
    start = time.monotonic()
    listed = server.tool("sandbox_list_sessions")["sessions"]
    list_s = time.monotonic() - start
    hibernated = sum(1 for s in listed if s["state"] == "hibernated")
    return {"n": len(ids), "hibernated": hibernated, "disk": du(dirs, False),
            "apparent": du(dirs, True), "procs": sum(len(in_cgroup(i)) for i in ids[:50]),
            "rss_before": rss_before, "rss_after": rss(server.proc.pid), "fork_s": fork_s,
            "list_s": list_s}


server = Server(BIN, "--hibernate-after-s", str(IDLE_S), "--pool-size", "2")
try:
    small = measure(server, SMALL, RUNS)
    large = measure(server, LARGE, max(2, RUNS // 2))
    many = thousand(server)
finally:
    server.stop()

load = open("/proc/loadavg").read().split()[:3]
print("Load average (1, 5, 15 min) at the end of the run: %s; the host is shared (2 cores), so "
      "these are loaded figures.\n" % ", ".join(load))
ms = lambda samples, p=50: "%.0f" % pct(samples, p)
print("| session | saved | resume p50 / p90, request to response | resume p50, server: all = "
      "load + sandbox + write in + restore | hibernate p50 / max, server | hibernate p50: save in "
      "sandbox + read out + store + stop | live sandbox PSS | after hibernation |")
print("|---|---|---|---|---|---|---|---|")
for name, r in (("small state", small), ("100 MB DataFrame", large)):
    left = "%d processes, %d cgroups" % (r["left_procs"], r["left_cgroups"])
    sandbox = [a - b - c - d for a, b, c, d in zip(r["resume_server"], r["load"], r["write"], r["restore"])]
    stop = [a - b - c - d for a, b, c, d in zip(r["hibernate"], r["save"], r["read"], r["store"])]
    print("| %s (%d runs) | %s | %s / %s ms | %s = %s + %s + %s + %s ms | %s / %.0f ms | "
          "%s + %s + %s + %s ms | %.0f MB | %s |" % (
              name, len(r["resume"]),
              "%.1f MB" % (r["saved"] / 1e6) if r["saved"] >= 1e6 else "%.1f KB" % (r["saved"] / 1e3),
              ms(r["resume"]), ms(r["resume"], 90), ms(r["resume_server"]), ms(r["load"]),
              ms(sandbox), ms(r["write"]), ms(r["restore"]), ms(r["hibernate"]),
              max(r["hibernate"]) * 1000, ms(r["save"]), ms(r["read"]), ms(r["store"]), ms(stop),
              statistics.median(r["live_pss"]) / 1e6, left))
print()
print("1,000 hibernated sessions (one small session and 999 forks of it): %d listed as "
      "hibernated; disk %.1f MB (%.1f KB each; apparent size %.1f MB); %d processes in the "
      "cgroups of the first 50; server RSS %.1f MB before, %.1f MB after; a fork of a "
      "hibernated session %.1f ms; sandbox_list_sessions with them %.0f ms." % (
          many["hibernated"], many["disk"] / 1e6, many["disk"] / many["n"] / 1e3,
          many["apparent"] / 1e6, many["procs"], many["rss_before"] / 1e6,
          many["rss_after"] / 1e6, many["fork_s"] * 1000, many["list_s"] * 1000))
PY
