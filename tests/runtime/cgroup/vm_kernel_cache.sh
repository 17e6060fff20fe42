#!/usr/bin/env bash
# Prepares a ../shared/tools/run-in-vm kernel cache (VM_CACHE) for a Debian kernel that run-in-vm
# cannot prepare itself, without editing that shared tool: Debian 13's 6.12 keeps its modules
# under /usr/lib/modules (run-in-vm looks in /lib/modules) and has virtio, virtio_ring and
# virtio_pci built in, and fscache folded into netfs (run-in-vm copies each as a .ko and stops
# when one is missing). run-in-vm boots whatever a cache dir holds when its initrd-version is
# its own, so this takes the default cache's initramfs (its init scripts are the tool's, and
# kernel-independent), puts in the kernel's own 9p modules (those it has as modules, in
# dependency order, uncompressed for busybox's insmod) and overlay, and the kernel's vmlinuz.
# usage: vm_kernel_cache.sh KERNEL_PACKAGE CACHE_DIR
#   KERNEL_PACKAGE  e.g. linux-image-6.12.117+deb13-amd64 (fetched with apt-get download: for a
#                   Debian 13 kernel on a Debian 12 host, APT_CONFIG naming a trixie source)
#   CACHE_DIR       the VM_CACHE to fill (replaced)
# The default cache (${XDG_CACHE_HOME:-~/.cache}/run-in-vm, made by any run of run-in-vm) must
# exist. Exit: 0 ready, 1 failed (saying why).
set -euo pipefail
package=$1 cache=$2
default=${XDG_CACHE_HOME:-$HOME/.cache}/run-in-vm
fail() { echo "vm_kernel_cache.sh: $*" >&2; exit 1; }
[ -s "$default/initrd.gz" ] && [ -s "$default/initrd-version" ] ||
  fail "no default run-in-vm cache in $default: run run-in-vm once first"
work=$(mktemp -d "${TMPDIR:-/tmp}/vm-kernel-cache.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root "$package" >&2) ||
  fail "cannot download $package (a Debian 13 kernel needs APT_CONFIG with a trixie source)"
dpkg-deb -x "$work"/"$package"_*.deb "$work/k"
version=${package#linux-image-}
modules=
for dir in "$work/k/usr/lib/modules/$version" "$work/k/lib/modules/$version"; do
  [ -d "$dir/kernel" ] && modules=$dir/kernel && break
done
[ -n "$modules" ] || fail "$package has no modules dir for $version"
mkdir "$work/root"
(cd "$work/root" && zcat "$default/initrd.gz" | busybox cpio -i -d 2>/dev/null)
[ -f "$work/root/init" ] && [ -d "$work/root/mods" ] || fail "unexpected initramfs in $default"
rm -f "$work/root/mods/"* "$work/root/mods-sd/"*
# Dependency order (netfs first: 6.12's 9pnet needs it); what the kernel has built in is left out.
i=0
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev \
         drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci fs/netfs/netfs \
         fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
  file=$(ls "$modules/$m".ko* 2>/dev/null | head -1 || true)
  [ -n "$file" ] || continue
  i=$((i + 1))
  out="$work/root/mods/$(printf %02d $i)-$(basename "$m").ko"
  case "$file" in
    *.xz) xz -dc "$file" > "$out" ;;
    *.zst) zstd -dcq "$file" > "$out" ;;
    *) cp "$file" "$out" ;;
  esac
done
[ -s "$work/root/mods/$(printf %02d $i)-9p.ko" ] || fail "$package has no 9p module"
overlay=$(ls "$modules/fs/overlayfs/overlay.ko"* | head -1)
case "$overlay" in
  *.xz) xz -dc "$overlay" > "$work/root/mods-sd/overlay.ko" ;;
  *) cp "$overlay" "$work/root/mods-sd/overlay.ko" ;;
esac
rm -rf "$cache"
mkdir -p "$cache"
(cd "$work/root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$cache/initrd.gz")
cp "$work/k/boot/vmlinuz-$version" "$cache/vmlinuz"
cp "$default/initrd-version" "$cache/initrd-version"
echo "$package" > "$cache/kernel-package"
echo "vm_kernel_cache.sh: $cache holds $package ($i modules)" >&2
