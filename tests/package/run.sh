#!/usr/bin/env bash
# tests/package/run.sh RESULTS_DIR: the Debian package's stage of tools/test. Builds the .deb
# with tools/package (lintian must report no error), then: installed_test.sh (a fresh Debian
# root), ci_recipe_test.sh (the README's CI recipe as an ordinary user) and service_in_vm.sh (the
# systemd unit in a VM booting systemd). Each is one JUnit case (package-*.xml) with its output.
# Runs after the e2e stage: the SDK client comes from tests/e2e/node_modules.
set -uo pipefail
results=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/tools/lib/common.sh"
work=$BUILD_DIR/package-test
mkdir -p "$work"
export FRESH_ROOT_CACHE=$work  # one mmdebstrap run, shared by the tests below and later runs
case_file=$root/tools/lib/junit_case.py
record() {  # record NAME DESCRIPTION RC LOG
  python3 "$case_file" "$results/package-$1.xml" package "$2" "$3" "$4"
  [ "$3" -eq 0 ] || { log "package: $2 failed:"; tail -30 "$4" >&2; }
}

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (a fresh root needs a mount namespace; the VM, dpkg)" > "$work/skip.log"
  python3 "$case_file" "$results/package-deb.xml" package "the Debian package" 77 "$work/skip.log"
  exit 0
fi
deb=$("$root/tools/package" 2>"$work/package.log")
rc=$?
record deb "tools/package builds the .deb and lintian reports no error" $rc "$work/package.log"
[ $rc -eq 0 ] || exit 0

archive=$(ls -t /var/lib/mcp-sandbox/archives/python-small-*.tar 2>/dev/null | head -n 1)
if [ -z "$archive" ]; then
  echo "image archive missing" > "$work/missing.log"
  record installed "the .deb in a fresh Debian root (needs the python-small archive)" 1 "$work/missing.log"
  exit 0
fi
"$here/installed_test.sh" "$deb" "$archive" "$work/installed" > "$work/installed.log" 2>&1
record installed "the .deb installs and works in a fresh Debian root: run, image import, serve with the SDK client" $? "$work/installed.log"
"$here/ci_recipe_test.sh" "$root/README.md" "$deb" "$archive" "$work/ci-recipe" > "$work/ci-recipe.log" 2>&1
record ci-recipe "the README's CI recipe, as written, as an ordinary user in a fresh Debian root" $? "$work/ci-recipe.log"
"$here/service_in_vm.sh" "$deb" "$root/../shared/tools/run-in-vm" "$work/service" > "$work/service.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  python3 "$case_file" "$results/package-service.xml" package "the systemd unit in a VM booting systemd" 77 "$work/service.log"
else
  record service "the systemd unit in a VM booting systemd: token, hardening, a sandbox run" $rc "$work/service.log"
fi
cat "$work"/installed.log "$work"/ci-recipe.log "$work"/service.log >&2
