#!/bin/sh
# debian_root.sh make DIR [RELEASE [PACKAGES]]
#     A fresh minimal Debian root of RELEASE (default bookworm) with PACKAGES (comma-separated,
#     default: what the CI recipe's runner has, sudo, jq and CA certificates) in DIR, unpacked
#     from a tarball that mmdebstrap makes once per release and package list (cached in
#     $DEBIAN_ROOT_CACHE, default beside DIR).
# debian_root.sh fetch CACHE [RELEASE [PACKAGES]]
#     Only the tarball of make, in CACHE: tools/test makes the ones its package stage needs
#     while it compiles, so the stage finds them.
# debian_root.sh enter DIR CMD...
#     Runs CMD as root inside DIR as its own mount root (a mount namespace, pivot_root, a fresh
#     /proc, the host's /sys and /dev). DEBIAN_ROOT_BINDS="SRC:DST[:ro] ..." bind-mounts host
#     paths into it first (DST inside the root, made when missing).
# Used by tools/package (the build root of --dist) and tests/package (the roots a package or the
# portable tarball is tried in).
#
# Why not chroot or bubblewrap: a sandbox's init pivots into its image and mounts a new /proc,
# which the kernel allows only from a real mount root and only while no part of the existing
# /proc is covered (bubblewrap covers /proc/sys): this is a system as a package would meet it.
set -eu
verb=$1 dir=$2
shift 2
# tarball CACHE [RELEASE [PACKAGES]]: the cached tarball's path, made first when missing. One
# maker at a time per tarball (tools/test's prefetch and a tools/package --dist may meet here).
tarball() {
  mkdir -p "$1"
  release=${2:-bookworm} packages=${3:-sudo,jq,ca-certificates}
  tarball=$1/$release-minbase-$(echo "$packages" | sha256sum | cut -c1-12).tar
  (
    flock 9
    if [ ! -s "$tarball" ]; then
      # mmdebstrap picks the output format from the name: keep ".tar" at the end. dpkg need not
      # sync each file: a root that dies half-made is made again (as the image recipe does).
      partial=${tarball%.tar}.partial.tar
      mmdebstrap --quiet --variant=minbase --dpkgopt=force-unsafe-io --include="$packages" \
        "$release" "$partial" "${SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2 ||
        { rm -f "$partial"; exit 1; }
      mv "$partial" "$tarball"
    fi
  ) 9>"$tarball.lock"
  echo "$tarball"
}

case $verb in
  fetch)
    tarball "$dir" "$@" >/dev/null
    ;;
  make)
    tarball=$(tarball "${DEBIAN_ROOT_CACHE:-$(dirname "$dir")}" "$@")
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -C "$dir" -xf "$tarball"
    # The host's name service files, as an installed system has its own (mmdebstrap writes
    # neither; without /etc/hosts, Debian 13's glibc resolves localhost to ::1 first).
    cp /etc/resolv.conf "$dir/etc/resolv.conf"
    cp /etc/hosts "$dir/etc/hosts"
    ;;
  enter)
    exec unshare --mount --pid --fork --propagation private -- sh -euc '
      r=$1; shift
      mount --bind "$r" "$r"
      mount -t proc proc "$r/proc"
      mount --rbind /sys "$r/sys"
      mount --rbind /dev "$r/dev"
      mount -t tmpfs tmpfs "$r/run"
      for bind in ${DEBIAN_ROOT_BINDS:-}; do
        src=${bind%%:*} rest=${bind#*:}
        dst=${rest%%:*} mode=${rest#"$dst"}
        if [ -d "$src" ]; then mkdir -p "$r$dst"; else mkdir -p "$(dirname "$r$dst")"; touch "$r$dst"; fi
        mount --bind "$src" "$r$dst"
        [ "$mode" != ":ro" ] || mount -o remount,bind,ro "$r$dst"
      done
      cd "$r"
      mkdir -p .oldroot
      pivot_root . .oldroot
      cd /
      umount -l /.oldroot
      rmdir /.oldroot
      exec "$@"' sh "$dir" "$@"
    ;;
  *)
    echo "usage: debian_root.sh make DIR [RELEASE [PACKAGES]] | fetch CACHE [RELEASE [PACKAGES]] | enter DIR [CMD...]" >&2
    exit 2
    ;;
esac
