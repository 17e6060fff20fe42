#!/usr/bin/env bash
# tests/package/run.sh RESULTS_DIR [STAGE...]: the package stage of tools/test, all of its
# STAGEs by default, or those named (to run one alone):
#   deb       tools/package builds the .deb (lintian must report no error), then
#             installed_test.sh (a fresh Debian 12 root), ci_recipe_test.sh (docs/ci.md's CI
#             recipe as an ordinary user) and service_in_vm.sh (the systemd unit in a VM
#             booting systemd)
#   portable  tools/package --portable: the tarball for CI runners, then portable_test.sh in
#             fresh Debian 12 and 13 roots
#   trixie    tools/package --dist trixie: the .deb built in a clean Debian 13 build root, whose
#             [unit] tier runs there too; then installed_test.sh in a fresh Debian 13 root. Last:
#             tools/test compiles it in the background (tools/lib/background_package_roots.sh),
#             which so has the other two stages' time to end in
#   prefetch  not a default stage: only the Debian root tarballs the stages above unpack
#             (mmdebstrap, a minute or two each on a fresh machine), which tools/test makes in
#             the background while it compiles
# Each check is one JUnit case (package-*.xml) with its output; each stage logs its wall time.
# SANDBOX_TEST_PACKAGE_STAGES (space-separated) narrows the default list the same way.
# Runs after the e2e stage: the SDK client comes from tests/e2e/node_modules.
set -uo pipefail
results=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/tools/lib/common.sh"
work=$BUILD_DIR/package-test
mkdir -p "$work" "$results"
# One mmdebstrap run per release and package list, shared by the tests below and later runs
# (also of other checkouts on this machine).
export DEBIAN_ROOT_CACHE=$SANDBOX_CACHE_DIR/roots
case_file=$root/tools/lib/junit_case.py
stages=("$@")
[ ${#stages[@]} -gt 0 ] || read -r -a stages <<<"${SANDBOX_TEST_PACKAGE_STAGES:-deb portable trixie}"
record() {  # record NAME DESCRIPTION RC LOG
  python3 "$case_file" "$results/package-$1.xml" package "$2" "$3" "$4"
  [ "$3" -eq 0 ] || { log "package: $2 failed:"; tail -30 "$4" >&2; }
}

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (a fresh root needs a mount namespace; the VM, dpkg)" > "$work/skip.log"
  python3 "$case_file" "$results/package-deb.xml" package "the Debian package" 77 "$work/skip.log"
  exit 0
fi
state_dir=$("$BUILD_DIR/mcp-sandbox" image ls --json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["state_dir"])' 2>/dev/null)
archive=$(ls -t "$state_dir"/archives/python-small-*.tar 2>/dev/null | head -n 1)
echo "the python-small image archive is missing (tools/test builds it: mcp-sandbox image build --variant small)" \
  > "$work/missing.log"

stage_deb() {
  local deb rc
  deb=$("$root/tools/package" 2>"$work/package.log")
  rc=$?
  record deb "tools/package builds the .deb and lintian reports no error" $rc "$work/package.log"
  [ $rc -eq 0 ] || return
  if [ -z "$archive" ]; then
    record installed "the .deb in a fresh Debian root (needs the python-small archive)" 1 "$work/missing.log"
    return
  fi
  "$here/installed_test.sh" "$deb" "$archive" "$work/installed" bookworm > "$work/installed.log" 2>&1
  record installed "the .deb installs and works in a fresh Debian root: run, image import, serve with the SDK client" $? "$work/installed.log"
  "$here/ci_recipe_test.sh" "$root/docs/ci.md" "$deb" "$archive" "$work/ci-recipe" > "$work/ci-recipe.log" 2>&1
  record ci-recipe "the CI recipe of docs/ci.md, as written, as an ordinary user in a fresh Debian root" $? "$work/ci-recipe.log"
  "$here/service_in_vm.sh" "$deb" "$root/../shared/tools/run-in-vm" "$work/service" > "$work/service.log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then
    python3 "$case_file" "$results/package-service.xml" package "the systemd unit in a VM booting systemd" 77 "$work/service.log"
  else
    record service "the systemd unit in a VM booting systemd: token, hardening, a sandbox run" $rc "$work/service.log"
  fi
  cat "$work"/installed.log "$work"/ci-recipe.log "$work"/service.log >&2
}

stage_trixie() {
  local deb rc xml
  deb=$("$root/tools/package" --dist trixie 2>"$work/trixie-package.log")
  rc=$?
  record trixie-deb "tools/package --dist trixie: the .deb built in a clean Debian 13 root, lintian reports no error, the [unit] tier passes there" \
    $rc "$work/trixie-package.log"
  # Catch2's own files: every [unit] case built with Debian 13's compiler and libraries.
  for xml in "$BUILD_DIR"/package-trixie/unit/*.xml; do
    [ -e "$xml" ] && cp "$xml" "$results/trixie-unit-$(basename "$xml")"
  done
  [ $rc -eq 0 ] || return
  if [ -z "$archive" ]; then
    record trixie-installed "the Debian 13 .deb in a fresh Debian 13 root (needs the python-small archive)" 1 "$work/missing.log"
    return
  fi
  "$here/installed_test.sh" "$deb" "$archive" "$work/installed-trixie" trixie > "$work/installed-trixie.log" 2>&1
  record trixie-installed "the Debian 13 .deb installs and works in a fresh Debian 13 root: run, image import, serve with the SDK client" \
    $? "$work/installed-trixie.log"
  cat "$work/installed-trixie.log" >&2
}

stage_prefetch() {
  local debian_root=$root/tools/package.d/debian_root.sh
  "$debian_root" fetch "$DEBIAN_ROOT_CACHE" bookworm &&
    "$debian_root" fetch "$DEBIAN_ROOT_CACHE" trixie &&
    "$debian_root" fetch "$DIST_BUILD_ROOTS" trixie "$(dist_build_packages trixie)"
}

stage_portable() {
  local tarball rc release
  tarball=$("$root/tools/package" --portable 2>"$work/portable-package.log")
  rc=$?
  record portable-tarball "tools/package --portable builds the tarball (nothing in it needs a glibc newer than Debian 12's)" \
    $rc "$work/portable-package.log"
  [ $rc -eq 0 ] || return
  for release in bookworm trixie; do
    if [ -z "$archive" ]; then
      record "portable-$release" "the portable tarball in a fresh $release root (needs the python-small archive)" 1 "$work/missing.log"
      continue
    fi
    "$here/portable_test.sh" "$tarball" "$archive" "$work/portable-$release" "$release" \
      > "$work/portable-$release.log" 2>&1
    record "portable-$release" "the portable tarball in a fresh $release root without the build's dependencies: run (root, ordinary user), serve with the SDK client, the Docker fallback" \
      $? "$work/portable-$release.log"
    cat "$work/portable-$release.log" >&2
  done
}

for stage in "${stages[@]}"; do
  case $stage in
    deb|portable|trixie|prefetch) ;;
    *) log "package: unknown stage '$stage' (deb, portable, trixie, prefetch)"; exit 2 ;;
  esac
  started=$(date +%s)
  "stage_$stage"
  log "package: stage $stage took $(( $(date +%s) - started )) s"
done
exit 0
