#!/usr/bin/env bash
# Where the time after a raise goes (issue #38), from the kernel's own trace: two processes spin
# on CPU 0 in sibling cpu groups (cgroup v1 here; v2's cpu.max where the host has it), one capped
# to a tenth of a CPU as the background cap does, then raised by writing its quota back, 300 ms
# later, $SANDBOX_BENCH_RAISES times (default 90). ftrace's sched_switch (an instance of its own,
# CLOCK_MONOTONIC) and a trace_marker just before each write give, per raise, the time until the
# raised group is switched in on CPU 0, how long the write took, and whether the switch came at
# a scheduler tick. Three ways to follow the write, taken in turn so that each sees the same
# load from other work:
#   none  the write alone (a busy process of the group is all there is to run);
#   wake  a process of the group that waits on a pipe is woken right after the write, as the
#         server writes a call's request to a sandbox's agent;
#   nice  the busy process's nice value lowered by one and put back, which makes the kernel
#         reschedule its CPU at once (a poke tried; not what the product does).
set -euo pipefail
if [ "$(id -u)" -ne 0 ] || [ ! -w /sys/kernel/tracing/instances ]; then
  echo "n/a: needs root and tracefs (/sys/kernel/tracing)"
  exit 0
fi
python3 - "${SANDBOX_BENCH_RAISES:-90}" <<'PY'
import os, re, sys, time

raises = int(sys.argv[1])
variants = ["none", "wake", "nice"]
trace = "/sys/kernel/tracing/instances/mcp-sandbox-raise-%d" % os.getpid()
v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
base = "/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/cpu"
parent = "%s/mcp-sandbox-raise-%d" % (base, os.getpid())


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def quota(group, micros):
    if v2:
        write(group + "/cpu.max", "%s 100000" % ("max" if micros < 0 else micros))
    else:
        write(group + "/cpu.cfs_quota_us", str(micros))


os.makedirs(parent)
if v2:
    write(parent + "/cgroup.subtree_control", "+cpu")
groups = {name: parent + "/" + name for name in ("normal", "raised")}
for group in groups.values():
    os.mkdir(group)
    quota(group, 100000)


def child(body):
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {0})
        body()
        os._exit(0)
    return pid


def spin():
    while True:
        pass


request_r, request_w = os.pipe()


def wait_for_calls():
    while os.read(request_r, 1):
        pass


normal, busy, waiting = child(spin), child(spin), child(wait_for_calls)
procs = "cgroup.procs" if v2 else "tasks"
write(groups["normal"] + "/" + procs, str(normal))
write(groups["raised"] + "/" + procs, str(busy))
write(groups["raised"] + "/" + procs, str(waiting))
os.sched_setaffinity(0, {1})
os.mkdir(trace)
write(trace + "/trace_clock", "mono")
write(trace + "/buffer_size_kb", "16384")
write(trace + "/events/sched/sched_switch/enable", "1")
write(trace + "/tracing_on", "1")
marker = open(trace + "/trace_marker", "w", buffering=1)
load = open("/proc/loadavg").read().split()[:3]
firsts = {v: [] for v in variants}
writes = {v: [] for v in variants}
# A switch to a process of the raised group on CPU 0; what ran before it there; at a tick
# (within 50 us after a multiple of the tick: CONFIG_HZ from the kernel's config).
switch = re.compile(r"\[000\]\s+\S+\s+(\d+\.\d+): sched_switch: .*next_comm=(\S+) next_pid=(\d+)")
raise_mark = re.compile(r"(\d+\.\d+): tracing_mark_write: raise")
hz = None
for config in ("/proc/config.gz", "/boot/config-" + os.uname().release):
    try:
        import gzip
        text = (gzip.open if config.endswith(".gz") else open)(config, "rt").read()
        hz = int(re.search(r"^CONFIG_HZ=(\d+)", text, re.M).group(1))
        break
    except (OSError, AttributeError):
        pass
tick_us = 1e6 / hz if hz else None
at_tick = {v: 0 for v in variants}
others_first = {v: 0 for v in variants}
try:
    for i in range(raises):
        variant = variants[i % len(variants)]
        quota(groups["raised"], 10000)
        time.sleep(0.3)
        write(trace + "/trace", "")  # each raise's trace on its own: no buffer overrun
        marker.write("raise %d %s\n" % (i, variant))
        before = time.monotonic()
        quota(groups["raised"], 100000)
        writes[variant].append((time.monotonic() - before) * 1e3)
        if variant == "wake":
            os.write(request_w, b"c")
        elif variant == "nice":
            os.setpriority(os.PRIO_PROCESS, busy, -1)
            os.setpriority(os.PRIO_PROCESS, busy, 0)
        time.sleep(0.06)
        raised_at, others = None, False
        for line in open(trace + "/trace").read().splitlines():
            mark = raise_mark.search(line)
            if mark:
                raised_at = float(mark.group(1))
                continue
            m = switch.search(line)
            if not m or raised_at is None:
                continue
            stamp, pid = float(m.group(1)), int(m.group(3))
            if pid not in (busy, waiting):
                others |= pid not in (normal, 0)
                continue
            firsts[variant].append((stamp - raised_at) * 1e3)
            if tick_us and (stamp * 1e6) % tick_us < 50:
                at_tick[variant] += 1
            others_first[variant] += others
            break
finally:
    write(trace + "/tracing_on", "0")
    for pid in (normal, busy, waiting):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    marker.close()
    write(trace + "/events/sched/sched_switch/enable", "0")
    os.rmdir(trace)
    for group in groups.values():
        os.rmdir(group)
    os.rmdir(parent)


def spread(xs):
    xs = sorted(xs)
    if not xs:
        return "n/a"
    at = lambda q: xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]
    return "%.2f / %.2f / %.2f" % (at(0.5), at(0.9), at(0.99))


print("Kernel %s, cgroup %s, CONFIG_HZ %s; load average before: %s" % (
    os.uname().release, "v2" if v2 else "v1", hz or "?", " ".join(load)))
print()
print("| after the quota write | raises | first on CPU 0, p50 / p90 / p99 ms | of them at a tick | other work ran first | the write, p50 ms |")
print("|---|---:|---:|---:|---:|---:|")
for v in variants:
    w = sorted(writes[v])
    print("| %s | %d | %s | %d | %d | %.2f |" % (v, len(firsts[v]), spread(firsts[v]), at_tick[v],
                                                others_first[v], w[len(w) // 2] if w else float("nan")))
PY
