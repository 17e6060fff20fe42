# Sourced by what bundles mcp-sandbox with its shared libraries (tools/package.d/portable.sh, the
# Swarm image's tools/deploy/swarm/build-image.sh): the libraries the binary opens with dlopen at
# their first use (runtime/docker/libcurl_on_demand.h, runtime/cgroup/libsystemd_on_demand.cc,
# rootfs/libarchive_on_demand.h, runtime/crypto/libcrypto_on_demand.h,
# mcp/auth/libcjose_on_demand.h with its libjansson),
# which ldd of the binary does not name, so a bundle made from ldd alone lacks them and the
# Docker backend, the OAuth key fetch and an ordinary user's systemd scope fail at their first
# use ("libcurl.so.4: cannot open shared object file"; an image import without libarchive).
on_demand_sonames=(libcurl.so.4 libsystemd.so.0 libarchive.so.13 libcrypto.so.3 libcjose.so.0)

# on_demand_libraries: one "soname => path" line per library, as ldd prints its own, followed by
# ldd's lines for that library's dependencies. Fails naming a library this host lacks.
on_demand_libraries() {
  local soname path
  for soname in "${on_demand_sonames[@]}"; do
    path=$(ldconfig -p | awk -v name="$soname" '$1 == name && /x86-64/ { print $NF; exit }')
    [ -n "$path" ] || { echo "no $soname on this host" >&2; return 1; }
    echo "$soname => $path"
    ldd "$path"
  done
}
