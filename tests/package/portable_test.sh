#!/usr/bin/env bash
# The portable tarball (tools/package --portable) where nothing of the build is: a fresh minimal
# Debian root of RELEASE with none of the build dependencies and none of the libraries the
# binary links, where the tarball is only unpacked. Checks: every library the binary loads but
# glibc comes from the tarball; --version; `image import`; `mcp-sandbox run` as root and as an
# ordinary user (namespace backend); `serve` driven by the official SDK client; and the Docker
# fallback (the host's daemon through its socket). Prints "ok"/"FAIL"/"skip" lines; exits 1 when
# a check failed.
# usage: portable_test.sh TARBALL IMAGE_ARCHIVE WORK_DIR RELEASE
set -uo pipefail
tarball=$1 archive=$2 work=$3 release=$4
here=$(cd "$(dirname "$0")" && pwd)
debian_root=$here/../../tools/package.d/debian_root.sh
root=$work/root
fail=0
source "$here/lib.sh"

"$debian_root" make "$root" "$release" || { echo "FAIL fresh $release root: mmdebstrap failed"; exit 1; }
# Unpacked at a path that is the same on the host and in the root: the Docker daemon, in the
# host's mount namespace, bind-mounts the agent from the path the server names. (A CI job in a
# container that shares the host's daemon needs the same: see docs/ci.md, CI runners.)
opt=$work/opt
rm -rf "$opt"; mkdir -p "$opt"
tar -C "$opt" -xzf "$tarball"
dir=$(ls -d "$opt"/mcp-sandbox-*-linux-x86_64)
binds="$opt:$opt:ro"
docker_socket=${DOCKER_HOST:-unix:///var/run/docker.sock}
docker_socket=${docker_socket#unix://}
daemon=
if "$here/../../tools/lib/dockerd.sh" status >/dev/null 2>&1; then
  daemon=1
  binds+=" $docker_socket:/var/tmp/docker.sock"
fi
inroot() { DEBIAN_ROOT_BINDS=$binds "$debian_root" enter "$root" "$@"; }
cp "$archive" "$root/var/tmp/python-small.tar"
bin=$dir/bin/mcp-sandbox
state=/var/lib/mcp-sandbox-portable-test

# Minbase has libseccomp and libsystemd (apt and systemd's tools link them), but nothing of the
# build and none of the other libraries the binary links.
check "the $release root has no compiler, no -dev package, no libarchive, libcurl, spdlog or fmt" \
  inroot sh -c '! command -v cc c++ g++ &&
    ! dpkg-query -W -f="\${binary:Package} \${Status}\n" "*-dev" 2>/dev/null | grep "ok installed" &&
    ! ldconfig -p | grep -E "lib(archive|curl|spdlog|fmt)\.so"'
check "every library the binary loads but glibc comes from the tarball" inroot sh -c "
  ldd $bin > /tmp/ldd.txt || exit 1
  ! grep 'not found' /tmp/ldd.txt || exit 1
  awk '\$2 == \"=>\" { print \$1, \$3 }' /tmp/ldd.txt | while read -r soname path; do
    case \$soname in libc.so.6|libm.so.6|libresolv.so.2|libpthread.so.0|libdl.so.2|librt.so.1) continue ;; esac
    case \$(realpath \"\$path\") in $dir/lib/*) ;; *) echo \"\$soname from \$path\"; exit 1 ;; esac
  done"
# cjose and jansson travel beside the binary, opened at their first use (MIT: their notice must
# travel with them).
check "the bundled cjose and jansson and their licences are in the tarball" sh -c "
  test -f $dir/lib/libcjose.so.0 && test -f $dir/lib/libjansson.so.4 &&
  test -f $dir/lib/libcrypto.so.3 &&
  grep -q 'Cisco' $dir/share/doc/bundled/libcjose0/copyright &&
  grep -qi 'Permission is hereby granted' $dir/share/doc/bundled/libcjose0/copyright &&
  grep -q 'Petri Lehtinen' $dir/share/doc/bundled/libjansson4/copyright &&
  grep -qi 'Permission is hereby granted' $dir/share/doc/bundled/libjansson4/copyright"
check "--version names version and commit" inroot sh -c \
  "$bin --version | grep -E '^mcp-sandbox [0-9.]+ \(commit [0-9a-f]{7,}'"
check "image import of an OCI archive" inroot env SANDBOX_STATE_DIR=$state \
  "$bin" image import /var/tmp/python-small.tar --name python-small
check "mcp-sandbox run as root (namespace backend) prints and exits 0" inroot sh -c \
  "echo 'print(6 * 7)' | SANDBOX_STATE_DIR=$state SANDBOX_BACKEND=namespace $bin run --image python-small - | grep -qx 42"
check "mcp-sandbox run as an ordinary user, with a state dir of its own" inroot sh -c "
  useradd --create-home runner &&
  setpriv --reuid=runner --regid=runner --init-groups env -i HOME=/home/runner PATH=/usr/bin:/bin sh -c '
    export SANDBOX_STATE_DIR=/home/runner/state
    $bin image import /var/tmp/python-small.tar --name python-small >/dev/null &&
    echo \"import os; print(os.getuid() != 0, 6 * 7)\" | $bin run --image python-small -' | grep -qx 'True 42'"

serve_checks env DEBIAN_ROOT_BINDS="$binds" "$debian_root" enter "$root" \
  env SANDBOX_STATE_DIR=$state SANDBOX_IMAGE=python-small SANDBOX_LOG_LEVEL=warn "$bin" serve

if [ -n "$daemon" ]; then
  check "the Docker fallback: run through the host's daemon, its image loaded from the store" \
    inroot sh -c "echo 'print(6 * 7)' | SANDBOX_STATE_DIR=$state SANDBOX_BACKEND=docker \
      DOCKER_HOST=unix:///var/tmp/docker.sock $bin run --image python-small - | grep -qx 42"
else
  echo "skip the Docker fallback: no Docker daemon answers (tools/lib/dockerd.sh start)"
fi
rm -rf "$root" "$opt"
exit $fail
