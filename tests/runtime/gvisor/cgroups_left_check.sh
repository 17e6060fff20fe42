#!/bin/bash
# After the behaviour suite (a ctest fixture's cleanup): no cgroup parent of the suite's root
# servers is left on the host. Each test process writes down the parent its server makes
# (mcp-sandbox-<hash of its state dir> for the namespace backend, the same with -gvisor for the
# gVisor backend; behaviour_fixture.cc) in OWNERS_FILE; every one of them must be gone, in every
# hierarchy, once the processes have ended. What is found is named, removed (children first, so
# the host is clean for the next run) and fails the check.
#
# usage: cgroups_left_check.sh OWNERS_FILE
set -u
owners_file=$1
if [ ! -s "$owners_file" ]; then
  echo "SKIPPED: no root server of the behaviour suite ran (no $owners_file)"
  exit 77
fi
left=()
while read -r owner; do
  [ -n "$owner" ] || continue
  while read -r dir; do
    [ -n "$dir" ] && left+=("$dir")
  done < <(find /sys/fs/cgroup -maxdepth 3 -type d -name "$owner" 2>/dev/null)
done < <(sort -u "$owners_file")
count=$(sort -u "$owners_file" | grep -c .)
if [ ${#left[@]} -eq 0 ]; then
  echo "ok: none of the $count cgroup parents of the suite's servers is left"
  rm -f "$owners_file"
  exit 0
fi
echo "FAILED: ${#left[@]} cgroup(s) of the behaviour suite's servers left on the host:"
for dir in "${left[@]}"; do
  echo "  $dir (children: $(find "$dir" -mindepth 1 -type d | wc -l), tasks: $(wc -l < "$dir/cgroup.procs"))"
  find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null
done
rm -f "$owners_file"
exit 1
