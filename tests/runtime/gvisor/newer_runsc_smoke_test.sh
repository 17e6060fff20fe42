#!/usr/bin/env bash
# A newer runsc with systrap (issue #39): Debian 13's runsc (0.0~20240729, a static binary) fetched
# the way a test must bring its own (an apt sources list for trixie in a scratch dir, `apt-get
# download`, `dpkg-deb -x` into a cache dir), then a short smoke of the gVisor backend with it on
# the systrap platform (SANDBOX_RUNSC, SANDBOX_GVISOR_PLATFORM=systrap): as root, and as an
# ordinary user (runsc --rootless), a one-shot print(1) that sees gVisor's kernel, and doctor
# naming the release and the platform.
# usage: newer_runsc_smoke_test.sh MCP_SANDBOX_BIN
# Cache: $SANDBOX_RUNSC_CACHE (default ~/.cache/mcp-sandbox/runsc-<version>), kept between runs.
# Skips (77) without root, the image, or the Debian archive (offline).
set -uo pipefail
source "$(dirname "$0")/../../cli/lib.sh"
bin=$1
version=0.0~20240729.0
skip_unless_root "apt-get download and the root half"
skip_unless_image "$bin" python

cache=${SANDBOX_RUNSC_CACHE:-$HOME/.cache/mcp-sandbox/runsc-${version#0.0~}}
runsc=$cache/usr/bin/runsc
if ! [ -x "$runsc" ]; then
  apt=$work/apt
  mkdir -p "$apt/lists/partial" "$apt/archives/partial"
  echo "deb http://deb.debian.org/debian trixie main" >"$apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives")
  if ! apt-get "${opts[@]}" -qq update >"$work/apt.log" 2>&1; then
    echo "SKIPPED: the Debian archive cannot be reached (apt-get update of trixie):"
    tail -n 3 "$work/apt.log"; exit 77
  fi
  (cd "$apt" && apt-get "${opts[@]}" -qq download "runsc=$version*") >>"$work/apt.log" 2>&1 ||
    { echo "FAIL apt-get download runsc=$version"; cat "$work/apt.log"; exit 1; }
  mkdir -p "$cache" && dpkg-deb -x "$apt"/runsc_*.deb "$cache" ||
    { echo "FAIL dpkg-deb -x into $cache"; exit 1; }
fi
check "the fetched runsc runs" "runsc version $version" "$("$runsc" --version | head -n 1)"

cat >"$work/kernel.py" <<'PY'
import os
print(1, os.uname().release)
PY
chmod 755 "$work" && chmod 644 "$work/kernel.py"
export SANDBOX_GVISOR_PLATFORM=systrap SANDBOX_POOL_SIZE=0 SANDBOX_HIBERNATE_AFTER_S=0
# The ordinary user runs a copy it can read (the cache is root's).
cp "$runsc" "$work/runsc" && chmod 755 "$work/runsc"
for who in root user; do
  if [ "$who" = root ]; then
    as=(env SANDBOX_RUNSC="$runsc")
  else
    as=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --
        env HOME="$work" TMPDIR="$work" SANDBOX_STATE_DIR="$work/state-$who" SANDBOX_RUNSC="$work/runsc")
    mkdir -p "$work/state-$who" && chown 65534:65534 "$work/state-$who"
    # The images the root server built, read-only (tests/cli/lib.sh borrow_shared_store's way).
    ln -s "$(store_dir "$bin")/images" "$work/state-$who/images"
  fi
  out=$("${as[@]}" "$bin" run --backend gvisor --image python "$work/kernel.py" 2>"$work/run-$who.err")
  rc=$?
  check "$who: print(1) on systrap exits 0" 0 $rc
  [ $rc -eq 0 ] || tail -n 5 "$work/run-$who.err"
  check "$who: it sees gVisor's kernel, not $(uname -r)" "1 4.4.0" "$out"
  doctor=$("${as[@]}" SANDBOX_BACKEND=gvisor "$bin" doctor 2>/dev/null | grep '^  gvisor ')
  check "$who: doctor says gvisor is usable on systrap" yes \
    "$(grep -q ' ok .*systrap' <<<"$doctor" && echo yes || echo "no: $doctor")"
done
exit $fail
