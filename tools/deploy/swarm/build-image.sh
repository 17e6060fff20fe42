#!/usr/bin/env bash
# tools/deploy/swarm/build-image.sh [BINARY [IMAGE]]: builds a container image of the mcp-sandbox
# server for the Swarm stack beside this script, offline, from a built (or installed) binary:
# the binary, the shared libraries it links (ldd) and its agent (sandbox-init, worker.py) at the
# package's paths, imported with `docker import`. No base image, no registry.
#   BINARY  default build/mcp-sandbox, else /usr/bin/mcp-sandbox
#   IMAGE   default mcp-sandbox:local
# The agent is also what sandbox containers bind-mount, by a path the Docker daemon resolves on
# the host: the stack mounts the host's agent directory at the same path (SANDBOX_AGENT_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
binary=${1:-}
if [ -z "$binary" ]; then
  if [ -x "$root/build/mcp-sandbox" ]; then binary=$root/build/mcp-sandbox; else binary=/usr/bin/mcp-sandbox; fi
fi
image=${2:-mcp-sandbox:local}
[ -x "$binary" ] || { echo "build-image.sh: $binary is not an executable" >&2; exit 2; }
agent=$(dirname "$binary")/agent
[ -d "$agent" ] || agent=$(dirname "$binary")/../lib/mcp-sandbox
[ -x "$agent/sandbox-init" ] || { echo "build-image.sh: no agent beside $binary" >&2; exit 2; }

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{usr/bin,usr/lib/mcp-sandbox,etc,tmp,run,var/lib/mcp-sandbox}
chmod 1777 "$tree/tmp"
install -m 0755 "$binary" "$tree/usr/bin/mcp-sandbox"
cp -a "$agent/." "$tree/usr/lib/mcp-sandbox/"
# The libraries with their paths as ldd resolves them (the loader included), symlinks followed,
# and those the binary opens at their first use with theirs (libcurl for the Docker backend the
# stack runs: tools/lib/on_demand_libraries.sh).
source "$root/tools/lib/on_demand_libraries.sh"
on_demand=$(on_demand_libraries)
{ ldd "$binary"; echo "$on_demand"; } |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u | while read -r lib; do
  mkdir -p "$tree$(dirname "$lib")"
  cp -L "$lib" "$tree$lib"
done
# CA certificates for an HTTPS package index (SANDBOX_INDEX_URL), when the host has them.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$tree/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$tree/etc/ssl/certs/"
fi
printf 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$tree/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$tree/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$tree/etc/nsswitch.conf"
tar -C "$tree" -c . | docker import \
  --change 'ENTRYPOINT ["/usr/bin/mcp-sandbox"]' \
  --change 'CMD ["serve", "--http"]' \
  --message "mcp-sandbox server from $binary" - "$image" >/dev/null
echo "$image"
