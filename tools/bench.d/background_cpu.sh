#!/usr/bin/env bash
# Background CPU priority per kernel (issue #38): the test "a background group yields the CPU
# until raised" run $SANDBOX_BENCH_CPU_RUNS times (default 5) on this host's kernel and in
# ../shared/tools/run-in-vm (Debian 12's kernel 6.1, CFS, cgroup v2, software emulation; more
# kernels with SANDBOX_BENCH_VM_KERNELS, as in kernels.sh), its
# figures gathered: the lowered group's CPU time against the normal one's over 0.5 s, and the
# raised group's share of the 50 ms after each raise, and the time from each raise to its first
# CPU time. Then, per kernel, raise_bench (tests/runtime/cgroup/raise_bench.cc,
# $SANDBOX_BENCH_RAISE_ROUNDS rounds of each kind, default 40): a woken call's first CPU time after
# a raise beside the same call in a group never lowered, in turn in the same run; once with the
# raise boost off (x1), once as the product raises (x10). Emulation is slow
# in absolute terms: compare the ratios within one kernel, never times across kernels.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

vm=${RUN_IN_VM:-$SANDBOX_ROOT/../shared/tools/run-in-vm}  # RUN_IN_VM: where shared/ is elsewhere
runs=${SANDBOX_BENCH_CPU_RUNS:-5}
raise_rounds=${SANDBOX_BENCH_RAISE_ROUNDS:-40}
if [ "$(id -u)" -ne 0 ]; then echo "n/a: needs root (cgroup v1 on the host, the VM)"; exit 0; fi
cmake --build "$BUILD_DIR" --target cgroup_tests cgroup2_tests raise_bench >&2
work=$BUILD_DIR/bench/background-cpu
rm -rf "$work"; mkdir -p "$work"
name="a background group yields the CPU until raised"

load=$(cut -d' ' -f1-3 /proc/loadavg)
# The host: whichever of the two the host's cgroups give (the other skips).
for _ in $(seq "$runs"); do
  "$BUILD_DIR/tests/runtime/cgroup_tests" "cgroup1: $name" 2>&1 | grep '^\[cgroup' >> "$work/host.txt" || true
  "$BUILD_DIR/tests/runtime/cgroup2_tests" "cgroup2: $name" 2>&1 | grep '^\[cgroup' >> "$work/host.txt" || true
done
# raise_bench with the product's raise boost and without it (background_cpu.h), in the same boot.
for boost in 1 ""; do
  "$BUILD_DIR/tests/runtime/raise_bench" --rounds "$raise_rounds" ${boost:+--raise-boost $boost} 2>/dev/null |
    grep '^{' >> "$work/raise.jsonl" || echo "raise_bench failed on the host" >&2
done
if [ -x "$vm" ]; then
  # Each kernel of $SANDBOX_BENCH_VM_KERNELS (as in kernels.sh; default Debian 12's 6.1).
  for kernel in ${SANDBOX_BENCH_VM_KERNELS:-linux-image-amd64}; do
    # run-in-vm caches one kernel per cache dir (tools/lib/common.sh).
    cache=$(vm_kernel_cache "$kernel") || { echo "no VM cache for $kernel" >&2; continue; }
    cat > "$work/in-vm.sh" <<GUEST
out=$work/vm-\$(uname -r).txt
for i in \$(seq $runs); do
  "$BUILD_DIR/tests/runtime/cgroup2_tests" "cgroup2: $name" 2>&1 | grep '^\[cgroup' >> "\$out"
done
for boost in 1 ""; do
  "$BUILD_DIR/tests/runtime/raise_bench" --rounds $raise_rounds \${boost:+--raise-boost \$boost} 2>/dev/null | grep '^{' >> "$work/raise.jsonl"
done
GUEST
    VM_CACHE="$cache" VM_KERNEL_PKG="$kernel" VM_WORKDIR="$work" "$vm" bash "$work/in-vm.sh" >&2 ||
      echo "the VM run on $kernel failed (exit $?)" >&2
  done
fi

# One row per kernel from the test's lines: "[cgroupN] cpu (SCHEME): lowered: normal A s,
# background B s of 0.5 s; the 50 ms after each raise, normal/raised s: N/R ...".
summarize() {  # summarize KERNEL FILE
  python3 - "$1" "$2" <<'PY'
import re, statistics, sys
kernel, path = sys.argv[1], sys.argv[2]
try:
    lines = [l for l in open(path) if "cpu (" in l]
except OSError:
    lines = []
if not lines:
    print("| %s | n/a | | | | | |" % kernel)
    sys.exit()
scheme = re.search(r"cpu \(([^)]*)\)", lines[0]).group(1)
lowered, shares, judged, quarter, calls, busy = [], [], 0, 0, [], []
for line in lines:
    m = re.search(r"lowered: normal ([\d.]+) s, background ([\d.]+) s", line)
    if m and float(m.group(1)) > 0:
        lowered.append(float(m.group(2)) / float(m.group(1)))
    f = re.search(r"the call's(.*?); the busy process's(.*?);", line)
    calls += [float(x) for x in (f.group(1).split() if f else [])]
    busy += [float(x) for x in (f.group(2).split() if f else [])]
    w = re.search(r"normal/raised s:(.*?) \(", line)
    for pair in (w.group(1).split() if w else []):
        if pair.endswith(")"):  # (late), (overcharged): taken again
            continue
        normal, raised = (float(x) for x in pair.split("/"))
        if normal + raised < 0.02:
            continue
        judged += 1
        quarter += raised * 3 > normal
        shares.append(raised / (normal + raised))
# The first CPU time after each raise (-1: none within the 50 ms window, counted as 50+), of
# the call's process (woken right after the raise) and of the busy one, p50 / p90 / p99.
def spread(xs):
    xs = sorted(50.0 if x < 0 else x for x in xs)
    if not xs:
        return "n/a"
    at = lambda q: xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]
    return "%.1f / %.1f / %.1f (%d)" % (at(0.5), at(0.9), at(0.99), len(xs))
print("| %s | %s | %.3f | %.2f | %d of %d | %s | %s |" % (
    kernel, scheme, statistics.median(lowered), statistics.median(shares), quarter, judged,
    spread(calls), spread(busy)))
PY
}
echo "The test \"$name\", $runs runs per kernel (five raises each); host load before: $load:"
echo
echo "| kernel | background scheme | lowered / normal CPU, median | raised share of the 50 ms after a raise, median | raises with a quarter or more | first CPU time after a raise of the call's process (woken after it), p50 / p90 / p99 ms (raises) (goal p99 <= 10) | the same of a busy process in the group |"
echo "|---|---|---:|---:|---:|---:|---:|"
summarize "$(uname -r) (host)" "$work/host.txt"
for file in "$work"/vm-*.txt; do
  [ -e "$file" ] || continue
  kernel=${file##*/vm-}
  summarize "${kernel%.txt} (VM)" "$file"
done

echo
echo "raise_bench, $raise_rounds rounds of each kind in turn per kernel: the first CPU time of a call's process"
echo "woken after a raise, beside the same call in a group never lowered (the baseline: busy at"
echo "normal priority throughout) and in an idle group; ms:"
echo
echo "| kernel | after a raise, p50 / p90 / p99 (goal p99 <= 10) | never lowered, p50 / p90 / p99 | raised / never lowered, p50 / p90 / p99 | idle group, p50 / p90 / p99 | the raise itself (its quota write), p50 / p99 | capped before the raise |"
echo "|---|---|---|---|---|---|---:|"
python3 - "$work/raise.jsonl" "$(uname -r)" <<'PY'
import json, sys
def at(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]
def spread(xs):
    return " / ".join("%.2f" % at(xs, q) for q in (0.5, 0.9, 0.99))
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    r = json.loads(line)
    raised, base = r["raised_ms"], r["never_lowered_ms"]
    ratios = " / ".join("%.2f" % (at(raised, q) / at(base, q)) if at(base, q) > 0 else "-"
                        for q in (0.5, 0.9, 0.99))
    where = "host" if r["kernel"] == sys.argv[2] else "VM"
    if r.get("cap", "product") not in ("product", "freeze"):
        where += ", cpu.max " + r["cap"] + " by hand"
    elif r.get("cap") == "freeze":
        where += ", lowered by cgroup.freeze"
    if "raise_boost" in r:  # x1: the raise boost off, to compare
        where += ", raise boost x%d" % r["raise_boost"]
    write = r.get("raise_call_ms") or [0]
    print("| %s (%s, %s) | %s | %s | %s | %s | %.2f / %.2f | %d of %d |" % (
        r["kernel"], where, r["mode"], spread(raised), spread(base), ratios,
        spread(r["idle_ms"]), at(write, 0.5), at(write, 0.99), r["capped"], r["rounds"]))
PY
