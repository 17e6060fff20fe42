#!/usr/bin/env bash
# The .deb on a system that never saw the source tree: a fresh minimal Debian root of RELEASE
# (default bookworm; the release the .deb was built for) where apt-get installs it (dependencies
# from the archive), then, inside: --version, the man page, bash completion, the agent's and the
# unit's places, `image import`, `mcp-sandbox run`, and `serve` driven by the
# official SDK client. Prints "ok"/"FAIL" lines; exits 1 when a check failed.
# usage: installed_test.sh DEB IMAGE_ARCHIVE WORK_DIR [RELEASE]
set -uo pipefail
deb=$1 archive=$2 work=$3 release=${4:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
debian_root=$here/../../tools/package.d/debian_root.sh
root=$work/root
fail=0
source "$here/lib.sh"
inroot() { "$debian_root" enter "$root" "$@"; }

"$debian_root" make "$root" "$release" || { echo "FAIL fresh $release root: mmdebstrap failed"; exit 1; }
cp "$deb" "$root/var/tmp/"
cp "$archive" "$root/var/tmp/python-small.tar"
debname=$(basename "$deb")

check "apt-get installs the package and its dependencies" inroot sh -c \
  "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /var/tmp/$debname"
check "--version names version and commit" inroot sh -c \
  'mcp-sandbox --version | grep -E "^mcp-sandbox [0-9.]+ \(commit [0-9a-f]{7,}"'
check "the man page is installed" test -s "$root/usr/share/man/man1/mcp-sandbox.1.gz"
check "the man page is valid roff (no groff warning)" sh -c "zcat '$root/usr/share/man/man1/mcp-sandbox.1.gz' | groff -man -Tutf8 -ww -z 2>&1 | (! grep .)"
check "bash completion is installed and parses" bash -n "$root/usr/share/bash-completion/completions/mcp-sandbox"
check "the agent is in /usr/lib/mcp-sandbox" test -x "$root/usr/lib/mcp-sandbox/sandbox-init" -a -s "$root/usr/lib/mcp-sandbox/worker.py" -a -s "$root/usr/lib/mcp-sandbox/session_state.py"
# Where the release keeps units: Debian 13's packages ship nothing under /lib (merged /usr).
unit_dir=usr/lib/systemd/system
[ "$release" != bookworm ] || unit_dir=lib/systemd/system
check "the systemd unit is installed in /$unit_dir" sh -c \
  "dpkg-deb -c '$deb' | grep -q ' ./$unit_dir/mcp-sandbox.service\$' && test -s '$root/$unit_dir/mcp-sandbox.service'"
# A state dir of its own: its cgroup parent is then not the host's default one, so nothing
# here can sweep a session of another server on this machine.
state=/var/lib/mcp-sandbox-package-test
check "image import of an OCI archive" inroot env SANDBOX_STATE_DIR=$state \
  mcp-sandbox image import /var/tmp/python-small.tar --name python-small
check "mcp-sandbox run prints and exits 0" inroot sh -c \
  "echo 'print(6 * 7)' | SANDBOX_STATE_DIR=$state mcp-sandbox run --image python-small - | grep -qx 42"
check "mcp-sandbox run passes the snippet's exit code" inroot sh -c \
  "echo 'raise SystemExit(3)' | SANDBOX_STATE_DIR=$state mcp-sandbox run --image python-small -; [ \$? -eq 3 ]"

serve_checks "$debian_root" enter "$root" \
  env SANDBOX_STATE_DIR=$state SANDBOX_IMAGE=python-small SANDBOX_LOG_LEVEL=warn mcp-sandbox serve
rm -rf "$root"
exit $fail
