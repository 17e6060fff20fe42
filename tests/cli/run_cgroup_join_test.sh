#!/usr/bin/env bash
# cgroup v1: a sandbox's first process joins its cgroups by itself (issue #41). The server opens
# each hierarchy's `tasks` file for it and the child writes "0" to each before it execs: a thread
# that moves itself skips the kernel's global threadgroup lock, whose writer (the server writing
# the pid to cgroup.procs, as before) waits for an RCU grace period, 5-17 ms of every start here.
# Checked with strace: the server writes no pid to any cgroup.procs, the child writes "0" to the
# tasks files, and the limits hold (the memory limit kills: exit 137). Needs root, strace, the
# small image and a cgroup v1 host (skipped on cgroup v2, where clone3 puts the child in its
# cgroup already).
# Usage: run_cgroup_join_test.sh /path/to/mcp-sandbox
set -u
bin=$1
image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store, cgroup v1 as root"
skip_unless_image "$bin" "$image"
command -v strace >/dev/null || { echo "SKIPPED: needs strace"; exit 77; }
[ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] ||
  { echo "SKIPPED: needs a cgroup v1 memory hierarchy (this host has none)"; exit 77; }
borrow_shared_store "$bin" "$work/state"
export SANDBOX_BACKEND=namespace

out=$(strace -f -qq -e trace=openat,write -o "$work/strace" "$bin" run --image "$image" - \
  <<<'print(6 * 7)' 2>/dev/null)
check "the snippet runs" 42 "$out"
procs=$(grep -c 'cgroup\.procs", O_WRONLY' "$work/strace")
check "the server opens no cgroup.procs for writing" 0 "$procs"
tasks_fds=$(sed -n 's#.*/sys/fs/cgroup/.*/tasks", O_WRONLY|O_CLOEXEC) = \([0-9]*\)$#\1#p' \
  "$work/strace" | sort -u)
joined=0
for fd in $tasks_fds; do
  grep -q "write($fd, \"0\", 1) *= 1" "$work/strace" && joined=$((joined + 1))
done
check "the child writes 0 to every hierarchy's tasks file it was given" \
  "$(echo "$tasks_fds" | wc -w)" "$joined"
check "it was given the tasks files (one per hierarchy in use)" yes \
  "$([ "$(echo "$tasks_fds" | wc -w)" -gt 0 ] && echo yes)"
"$bin" run --image "$image" --memory 64m - >/dev/null 2>&1 \
  <<<'b = bytearray(300 << 20); b[::4096] = b"x" * len(b[::4096])'
check "its memory limit kills (exit 137)" 137 $?
exit $fail
