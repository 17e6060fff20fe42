#!/bin/sh
# Runs a test binary as an unprivileged user, so the namespace backend's suite also covers an
# ordinary user's server (single-id user namespace map, no cgroup unless one is delegated).
# Used as the CROSSCOMPILING_EMULATOR of ns_sandbox_tests_unpriv: ctest and test discovery run
# "as_unprivileged.sh <binary> <args>". Already unprivileged: runs the binary as is.
# SANDBOX_TEST_UNPRIV_UID picks the uid (default 65534, "nobody"); the tests write only under
# $TMPDIR (default /tmp), which that user can write.
set -eu
if [ "$(id -u)" -ne 0 ]; then
  exec "$@"
fi
uid=${SANDBOX_TEST_UNPRIV_UID:-65534}
exec setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all -- "$@"
