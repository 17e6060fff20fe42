#!/usr/bin/env bash
# Issue #15's proof: boots ../shared/tools/run-in-vm in its systemd mode (systemd as PID 1 on a
# pure cgroup v2 hierarchy, an ordinary user's systemd manager and session bus up) and runs
# systemd_scope_check.py as that user against the real mcp-sandbox binary: the server asks the
# user's manager for a delegated scope and its sandboxes get cgroup v2 limits.
# usage: run_systemd_scope_in_vm.sh MCP_SANDBOX RUN_IN_VM WORK_DIR [IMAGE]
# Exit: 0 every check passed, 1 one failed, 77 (skipped) when run-in-vm or the image is missing.
set -uo pipefail
bin=$1 vm=$2 work=$3 image=${4:-python-small}
here=$(cd "$(dirname "$0")" && pwd)
store=/var/lib/mcp-sandbox

if [ ! -x "$vm" ]; then
  echo "SKIPPED: $vm not found (CI keeps shared/ beside the checkout)"
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (run-in-vm's systemd mode, and the system image store)"
  exit 77
fi
if ! SANDBOX_STATE_DIR=$store "$bin" image ls 2>/dev/null | grep -q "^$image "; then
  echo "SKIPPED: image $image is not in $store (tools/test builds it)"
  exit 77
fi
mkdir -p "$work"
rm -f "$work"/*.log "$work"/result
# The user writes its log here: the serial console is slow, and the work dir keeps host modes.
chmod 0777 "$work"

# As root in the guest: let the user read the system store's images and write session records
# there. The guest's / is an overlay with a tmpfs upper layer, so chown copies up only these
# directories' metadata; the image trees stay root's and are only read (as the unprivileged
# namespace tests read them).
cat > "$work/in-vm.sh" <<GUEST
set -u
cd "$work"
mkdir -p $store/sessions
chown "\$VM_USER" $store $store/sessions $store/images
for f in $store/images/.names.lock $store/images/.lock-*; do
  [ -e "\$f" ] && chown "\$VM_USER" "\$f"
done
vm-user env SANDBOX_STATE_DIR=$store python3 "$here/systemd_scope_check.py" "$bin" "$image" \
  > check.log 2>&1
rc=\$?
cat check.log
echo \$rc > result
exit \$rc
GUEST

VM_INIT=systemd VM_USER=sbxuser VM_WORKDIR="$work" "$vm" bash "$work/in-vm.sh"
rc=$?
if [ $rc -ne 0 ] && [ ! -s "$work/result" ]; then
  echo "run-in-vm failed before the checks reported (exit $rc)"
fi
exit $rc
