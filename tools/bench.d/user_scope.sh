#!/usr/bin/env bash
# Session create + agent hello + print(1) (ns_bench) in one systemd VM (../shared/tools/run-in-vm,
# VM_INIT=systemd), two ways side by side: as root in the root cgroup (the root path), and as an
# ordinary user whose sandboxes go under the delegated scope the user's systemd manager gives the
# server (issue #15). Blocks alternate, root then user, $SANDBOX_BENCH_VM_ROUNDS times (default
# 5) of $SANDBOX_BENCH_VM_RUNS sessions (default 20): the table gives the median of the blocks'
# p50s and the user/root ratio. Everything runs under software emulation, so the absolute
# figures are many times the host's; the ratio is the point.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

vm=$SANDBOX_ROOT/../shared/tools/run-in-vm
bench=$BUILD_DIR/tests/runtime/ns_bench
rounds=${SANDBOX_BENCH_VM_ROUNDS:-5}
runs=${SANDBOX_BENCH_VM_RUNS:-20}
if [ ! -x "$vm" ]; then echo "n/a: $vm not found"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "n/a: needs root (run-in-vm's systemd mode)"; exit 0; fi
cmake --build "$BUILD_DIR" --target ns_bench sandbox-init >&2
if ! rootfs=$("$bench" --print-rootfs); then
  echo "n/a: no image rootfs (run \`mcp-sandbox image build\`)"
  exit 0
fi

work=$BUILD_DIR/bench/user-scope-vm
rm -rf "$work"; mkdir -p "$work"; chmod 0777 "$work"
cat > "$work/in-vm.sh" <<GUEST
set -u
cd "$work"
one() {  # one WHO: a block of sessions; appends its p50 to WHO.p50
  local out
  if [ "\$1" = root ]; then
    out=\$("$bench" --rootfs "$rootfs" --runs $runs --concurrent 1 --warm 1 --idle 0 2>/dev/null)
  else
    out=\$(vm-user "$bench" --rootfs "$rootfs" --runs $runs --concurrent 1 --warm 1 --idle 0 \
      2>/dev/null)
  fi
  echo "\$out" | sed -n 's/^namespace backend, //p' | head -n 1 >> "\$1.mode"
  echo "\$out" | sed -n 's/^| create + hello + print(1) | \([0-9.]*\) ms.*/\1/p' >> "\$1.p50"
}
for i in \$(seq $rounds); do one root; one user; done
GUEST
VM_INIT=systemd VM_USER=sbxbench VM_WORKDIR="$work" "$vm" bash "$work/in-vm.sh" >&2 ||
  { echo "n/a: the VM run failed (exit $?)"; exit 0; }

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
root_p50=$(median "$work/root.p50")
user_p50=$(median "$work/user.p50")
if [ -z "$root_p50" ] || [ -z "$user_p50" ]; then echo "n/a: no figures (see $work)"; exit 0; fi
echo "In one systemd VM under software emulation, $rounds alternating blocks of $runs sessions each:"
echo
echo "- root: $(head -n 1 "$work/root.mode")"
echo "- user: $(head -n 1 "$work/user.mode")"
echo
echo "| create + hello + print(1), median of the blocks' p50 | root path | delegated user scope | user / root |"
echo "|---|---|---|---|"
awk -v r="$root_p50" -v u="$user_p50" \
  'BEGIN { printf "| in the VM | %.0f ms | %.0f ms | %.2f |\n", r, u, u / r }'
echo
echo "blocks' p50 (ms): root $(tr '\n' ' ' < "$work/root.p50"); user $(tr '\n' ' ' < "$work/user.p50")"
