#!/bin/sh
# fresh_root.sh make DIR        : a fresh minimal Debian bookworm root in DIR, unpacked from a
#                                 tarball that mmdebstrap makes once (cached in $FRESH_ROOT_CACHE,
#                                 default beside DIR)
# fresh_root.sh enter DIR CMD...: runs CMD as root inside DIR as its own mount root (a mount
#                                 namespace, pivot_root, a fresh /proc, the host's /sys and /dev)
#
# Why not chroot or bubblewrap: a sandbox's init pivots into its image and mounts a new /proc,
# which the kernel allows only from a real mount root and only while no part of the existing
# /proc is covered (bubblewrap covers /proc/sys): this is a system as a package would meet it.
set -eu
verb=$1 dir=$2
shift 2
case $verb in
  make)
    # minbase plus what the CI recipe's runner has: sudo, jq, CA certificates.
    packages=sudo,jq,ca-certificates
    cache=${FRESH_ROOT_CACHE:-$(dirname "$dir")}
    mkdir -p "$cache"
    tarball=$cache/bookworm-minbase-$(echo "$packages" | sha256sum | cut -c1-12).tar
    if [ ! -s "$tarball" ]; then
      # mmdebstrap picks the output format from the name: keep ".tar" at the end.
      mmdebstrap --quiet --variant=minbase --include="$packages" bookworm \
        "${tarball%.tar}.partial.tar" http://deb.debian.org/debian
      mv "${tarball%.tar}.partial.tar" "$tarball"
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -C "$dir" -xf "$tarball"
    cp /etc/resolv.conf "$dir/etc/resolv.conf"
    ;;
  enter)
    exec unshare --mount --pid --fork --propagation private -- sh -euc '
      r=$1; shift
      mount --bind "$r" "$r"
      mount -t proc proc "$r/proc"
      mount --rbind /sys "$r/sys"
      mount --rbind /dev "$r/dev"
      mount -t tmpfs tmpfs "$r/run"
      cd "$r"
      mkdir -p .oldroot
      pivot_root . .oldroot
      cd /
      umount -l /.oldroot
      rmdir /.oldroot
      exec "$@"' sh "$dir" "$@"
    ;;
  *)
    echo "usage: fresh_root.sh make|enter DIR [CMD...]" >&2
    exit 2
    ;;
esac
