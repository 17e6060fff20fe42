#!/usr/bin/env bash
# tools/package.d/portable.sh (tools/package --portable): the portable tarball for CI runners,
# build/portable/mcp-sandbox-<version>-linux-x86_64.tar.gz, printed on stdout. It holds
#   bin/mcp-sandbox                  the server and command line
#   lib/mcp-sandbox/                 its agent, sandbox-init (static: it runs inside any image)
#                                    and worker.py, where the binary looks (bin/../lib/mcp-sandbox)
#   lib/*.so.*                       every shared library the binary loads but glibc's
#   share/doc/                       LICENSE, the package's copyright file, and the copyright
#                                    file of each bundled library's Debian package
#   share/man/man1/mcp-sandbox.1
# and needs nothing from the host but the kernel and glibc 2.36 or newer (Debian 12's).
#
# Why a bundle and not one static binary: libstdc++ and libgcc are linked statically, but
# Debian's libsystemd has no static archive and its libcurl one needs LDAP, Kerberos, RTMP and SSH
# archives Debian does not ship; glibc itself must stay shared (NSS, and it is the one library
# every host has). So the libraries travel beside the binary, found through its DT_RPATH
# ($ORIGIN/../lib; an RPATH, unlike a RUNPATH, also serves the libraries' own dependencies), and
# as shared libraries a user can replace, as the LGPL asks of libseccomp and libsystemd. They are
# built on Debian 12, so none needs a glibc newer than 2.36: checked below, over every file.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$SANDBOX_ROOT"
tree=$SANDBOX_ROOT/build-portable
out=$BUILD_DIR/portable
oldest_glibc=2.36

# Only the binary and its agent, with link flags of their own; the compile flags are the main
# tree's, so ccache serves every object the main build compiled.
SANDBOX_BUILD_TARGETS="mcp-sandbox sandbox-init" build_project "$tree" \
  -DSANDBOX_BUILD_TESTS=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc -Wl,--disable-new-dtags" \
  -DCMAKE_BUILD_RPATH='$ORIGIN/../lib'

version=$("$tree/mcp-sandbox" --version | awk '{ print $2; exit }')
name=mcp-sandbox-$version-linux-x86_64
stage=$out/$name
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/lib/mcp-sandbox" "$stage/share/doc/mcp-sandbox" \
  "$stage/share/man/man1" "$stage/share/doc/bundled"
install -m 755 -s "$tree/mcp-sandbox" "$stage/bin/"
install -m 755 -s "$tree/agent/sandbox-init" "$stage/lib/mcp-sandbox/"
install -m 644 runtime/agent/worker.py "$stage/lib/mcp-sandbox/"
install -m 644 LICENSE tools/package.d/copyright "$stage/share/doc/mcp-sandbox/"
install -m 644 tools/package.d/mcp-sandbox.1 "$stage/share/man/man1/"

# owner_package PATH: the Debian package that ships the library ldd found at PATH (bookworm's
# dpkg knows some under /usr/lib only, ldd may name them under /lib).
owner_package() {
  local candidate
  for candidate in "$1" "/usr$1" "$(realpath "$1")"; do
    dpkg-query -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  return 1
}
while read -r soname path; do
  pkg=$(owner_package "$path") || { log "portable: no Debian package ships $path"; exit 1; }
  [ "$pkg" != libc6 ] || continue  # glibc: the host's
  cp -L "$path" "$stage/lib/$soname"
  chmod 644 "$stage/lib/$soname"
  mkdir -p "$stage/share/doc/bundled/$pkg"
  cp -L "/usr/share/doc/$pkg/copyright" "$stage/share/doc/bundled/$pkg/"
done < <(ldd "$stage/bin/mcp-sandbox" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')

# Every file's newest glibc symbol version: none may be newer than Debian 12's.
newest=$(find "$stage" -type f \( -name '*.so*' -o -perm -u+x \) -exec objdump -T {} + 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ "$(printf '%s\n%s\n' "$newest" "$oldest_glibc" | sort -V | tail -1)" != "$oldest_glibc" ]; then
  log "portable: a file needs glibc $newest, newer than Debian 12's $oldest_glibc"; exit 1
fi
log "portable: $(ls "$stage/lib" | grep -c '\.so') bundled libraries; newest glibc symbol: $newest"

tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime="@$(git log -1 --format=%ct 2>/dev/null || echo 0)" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
