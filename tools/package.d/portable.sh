#!/usr/bin/env bash
# tools/package.d/portable.sh (tools/package --portable): the portable tarball for CI runners,
# build/portable/mcp-sandbox-<version>-linux-x86_64.tar.gz, printed on stdout. It holds
#   bin/mcp-sandbox                  the server and command line
#   lib/mcp-sandbox/                 its agent, sandbox-init (static: it runs inside any image)
#                                    and worker.py, where the binary looks (bin/../lib/mcp-sandbox)
#   lib/*.so.*                       every shared library the binary loads but glibc's, libcurl,
#                                    libsystemd, libarchive, libcrypto and libcjose (opened at
#                                    their first use) and their dependencies included
#   share/doc/                       LICENSE, the package's copyright file, and the copyright
#                                    file of each bundled library's Debian package (cjose and
#                                    jansson: MIT, whose notice must travel with the binary)
#   share/man/man1/mcp-sandbox.1
# and needs nothing from the host but the kernel and glibc 2.36 or newer (Debian 12's).
#
# Why a bundle and not one static binary: Debian's libsystemd has no static archive, its libcurl
# one needs LDAP, Kerberos, RTMP and SSH archives Debian does not ship, and glibc must stay shared
# (NSS; and it is the one library every host has). So the libraries travel beside the binary,
# found through its DT_RPATH ($ORIGIN/../lib; an RPATH, unlike a RUNPATH, also serves the
# libraries' own dependencies), and as shared libraries a user can replace, as the LGPL asks of
# libseccomp and libsystemd. libstdc++ travels too, not linked statically: spdlog, fmt and ICU
# need it shared, and one process must not hold two copies of it. Only the agent is static
# (it runs inside any image); cjose and its jansson travel as shared libraries too, opened at
# their first use like libcrypto (a one-shot run loads none of them). All of it is built on
# Debian 12, so nothing needs a glibc newer than 2.36: checked below, over every file.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/on_demand_libraries.sh"
cd "$SANDBOX_ROOT"
tree=$SANDBOX_ROOT/build-portable
out=$BUILD_DIR/portable
oldest_glibc=2.36

# Only the binary and its agent, with a link flag of their own (the RPATH); the compile flags
# and the unity batches (or their absence) are the main tree's, so ccache serves every object
# the main build compiled.
main_unity=$(sed -n 's/^SANDBOX_UNITY:BOOL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
SANDBOX_BUILD_TARGETS="mcp-sandbox sandbox-init" build_project "$tree" \
  -DSANDBOX_BUILD_TESTS=OFF -DSANDBOX_UNITY="${main_unity:-OFF}" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--disable-new-dtags -Wl,-rpath,'\$ORIGIN/../lib'"

version=$("$tree/mcp-sandbox" --version | awk '{ print $2; exit }')
name=mcp-sandbox-$version-linux-x86_64
stage=$out/$name
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/lib/mcp-sandbox" "$stage/share/doc/mcp-sandbox" \
  "$stage/share/man/man1" "$stage/share/doc/bundled"
install -m 755 -s "$tree/mcp-sandbox" "$stage/bin/"
install -m 755 -s "$tree/agent/sandbox-init" "$stage/lib/mcp-sandbox/"
install -m 644 runtime/agent/worker.py runtime/agent/session_state.py "$stage/lib/mcp-sandbox/"
install -m 644 LICENSE tools/package.d/copyright "$stage/share/doc/mcp-sandbox/"
tools/package.d/man_page.sh "$tree/mcp-sandbox" >"$stage/share/man/man1/mcp-sandbox.1"

# The Debian package of each library ldd finds, asked of dpkg once (a query per file takes
# seconds). ldd may name a library under /lib that bookworm's dpkg knows under /usr/lib only, or
# by a symlink: each is looked up under all three names.
# The libraries opened at their first use are not named by ldd of the binary: they and their own
# dependencies come from tools/lib/on_demand_libraries.sh (the RPATH serves the binary's dlopen
# and their dependencies the same way).
on_demand=$(on_demand_libraries) || { log "portable: the libraries opened on demand"; exit 1; }
mapfile -t libraries < <( {
  ldd "$stage/bin/mcp-sandbox"
  echo "$on_demand"
} | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u -k1,1)
candidates=()
for entry in "${libraries[@]}"; do
  path=${entry#* }
  candidates+=("$path" "/usr$path" "$(realpath "$path")")
done
declare -A owner
while IFS= read -r line; do
  owner[${line##*: }]=${line%%:*}
done < <(dpkg-query -S "${candidates[@]}" 2>/dev/null)
for entry in "${libraries[@]}"; do
  soname=${entry%% *} path=${entry#* }
  pkg=${owner[$path]:-${owner[/usr$path]:-${owner[$(realpath "$path")]:-}}}
  [ -n "$pkg" ] || { log "portable: no Debian package ships $path"; exit 1; }
  [ "$pkg" != libc6 ] || continue  # glibc: the host's
  cp -L "$path" "$stage/lib/$soname"
  chmod 644 "$stage/lib/$soname"
  mkdir -p "$stage/share/doc/bundled/$pkg"
  cp -L "/usr/share/doc/$pkg/copyright" "$stage/share/doc/bundled/$pkg/"
done

# Every file's newest glibc symbol version: none may be newer than Debian 12's. (objdump fails
# on the static agent, which has no dynamic symbols and needs no glibc of the host's.)
newest=$( { find "$stage" -type f \( -name '*.so*' -o -perm -u+x \) -exec objdump -T {} + \
  2>/dev/null || true; } | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ "$(printf '%s\n%s\n' "$newest" "$oldest_glibc" | sort -V | tail -1)" != "$oldest_glibc" ]; then
  log "portable: a file needs glibc $newest, newer than Debian 12's $oldest_glibc"; exit 1
fi
log "portable: $(ls "$stage/lib" | grep -c '\.so') bundled libraries; newest glibc symbol: $newest"

tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime="@$(git log -1 --format=%ct 2>/dev/null || echo 0)" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
