#!/usr/bin/env bash
# The session, pool and burst benches per kernel (issue #38): tools/lib/kernel_bench.py on this
# host's kernel and inside ../shared/tools/run-in-vm on each kernel of $SANDBOX_BENCH_VM_KERNELS
# (run-in-vm's VM_KERNEL_PKG values, space-separated; default linux-image-amd64, Debian 12's
# 6.1; a Debian 13 kernel, e.g. linux-image-6.12.117+deb13-amd64, needs APT_CONFIG naming a
# trixie package source on the host, and its cache is made by
# tests/runtime/cgroup/vm_kernel_cache.sh). Per kernel: create +
# print(1) with the pool on vs off, a burst's call p99 with the pool on vs off, and the pool's
# fill rate. The VM is emulated (no KVM on most build hosts): compare the ratios within one
# kernel, never times across kernels. The burst's shape: BENCH_KERNEL_BURST_SESSIONS (50; 0 skips
# it) x BENCH_KERNEL_BURST_CALLS (20) on the host, BENCH_KERNEL_VM_BURST_SESSIONS (10) x
# BENCH_KERNEL_VM_BURST_CALLS (5) in the VM, where emulation makes each start seconds long (a
# VM run of 5 creates and 10 x 5 takes about 15 minutes here); SANDBOX_BENCH_KERNEL_SAMPLES
# create samples (10; 5 in the VM).
# The raise figures per kernel (first CPU time after a raise) are background_cpu.sh's.
# Needs root and the default image. Prints markdown.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
bin=${MCP_SANDBOX_BIN:-$BUILD_DIR/mcp-sandbox}
vm=${RUN_IN_VM:-$SANDBOX_ROOT/../shared/tools/run-in-vm}  # RUN_IN_VM: where shared/ is elsewhere
[ -x "$bin" ] || { echo "n/a: $bin is not built"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "n/a: runs as root only (cgroups, the VM)"; exit 0; }
"$bin" image ls 2>/dev/null | grep -q '^python ' || { echo "n/a: the python image is not in the store"; exit 0; }
store=$("$bin" image ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state_dir"])')
samples=${SANDBOX_BENCH_KERNEL_SAMPLES:-10}
sessions=${BENCH_KERNEL_BURST_SESSIONS:-50}
calls=${BENCH_KERNEL_BURST_CALLS:-20}
vm_samples=$(( samples < 5 ? samples : 5 ))
vm_sessions=${BENCH_KERNEL_VM_BURST_SESSIONS:-10}
vm_calls=${BENCH_KERNEL_VM_BURST_CALLS:-5}
work=$BUILD_DIR/bench/kernels
rm -rf "$work"; mkdir -p "$work"

# The guest (and the host) run the same script: a private state dir borrowing the store's images.
cat > "$work/run.sh" <<RUN
set -u
state=\$(mktemp -d /tmp/kernel-bench.XXXXXX)
for part in images archives; do ln -s "$store/\$part" "\$state/\$part"; done
export SANDBOX_LOG_LEVEL=warn SANDBOX_IMAGE=python SANDBOX_HIBERNATE_AFTER_S=0
python3 "$SANDBOX_ROOT/tools/lib/kernel_bench.py" "$bin" "\$state" \${SHAPE:-$samples $sessions $calls} \
  >> "$work/results.jsonl" 2>> "$work/errors.log"
rm -rf "\$state"
RUN
bash "$work/run.sh"
if [ -x "$vm" ]; then
  for kernel in ${SANDBOX_BENCH_VM_KERNELS:-linux-image-amd64}; do
    # run-in-vm caches one kernel per cache dir (tools/lib/common.sh).
    cache=$(vm_kernel_cache "$kernel") || { echo "no VM cache for $kernel" >&2; continue; }
    VM_CACHE=$cache VM_KERNEL_PKG=$kernel VM_WORKDIR="$work" "$vm" \
      "SHAPE='$vm_samples $vm_sessions $vm_calls' bash $work/run.sh" >&2 ||
      echo "the VM run on $kernel failed (exit $?)" >&2
  done
fi

echo "Per kernel, $samples creates and a burst of $sessions sessions x $calls calls on the host ($vm_samples and $vm_sessions x $vm_calls in the VM; stdio), pool on (defaults) and off:"
echo
echo "| kernel | create + print(1) p50 ms, pool / no pool | ratio | burst call p99 ms, pool / no pool | ratio (goal <= 1.5) | pool fill, sandboxes/s |"
echo "|---|---|---:|---|---:|---:|"
python3 - "$work/results.jsonl" "$(uname -r)" <<'PY'
import json, sys
host = sys.argv[2]
for line in open(sys.argv[1]):
    r = json.loads(line)
    on, off = r["create_print_ms"]["pool"], r["create_print_ms"]["no_pool"]
    kernel = r["kernel"] + (" (host)" if r["kernel"] == host else " (VM)")
    burst = r.get("burst")
    if burst and "calls" in burst["pool"] and "calls" in burst["no_pool"]:
        b_on, b_off = burst["pool"]["calls"][1], burst["no_pool"]["calls"][1]
        burst_cells = "%.0f / %.0f | %.2f" % (b_on, b_off, b_on / b_off)
    else:
        burst_cells = "n/a | "
    print("| %s | %.0f / %.0f | %.2f | %s | %s |" % (
        kernel, on[0], off[0], on[0] / off[0], burst_cells, r.get("pool_fill_per_s")))
PY
