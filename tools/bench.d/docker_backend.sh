#!/usr/bin/env bash
# The Docker backend side by side with the namespace backend and the per-call `docker exec`
# approach of the Docker-based server it replaces: create + first print(1), and warm print(1).
# Needs root and a Docker daemon (started here with tools/lib/dockerd.sh, and stopped again if
# this script started it). The image: $SANDBOX_DOCKER_IMAGE, else mcp-sandbox/python:latest
# (loaded from the newest `image build` archive when the daemon lacks it), else the test image
# mcp-sandbox-test/python:bookworm. The namespace backend runs the same image, exported.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "n/a: the Docker benchmark runs as root only (the daemon's socket is root's)"
  exit 0
fi
command -v dockerd >/dev/null || ensure_packages docker.io
bench_dockerd_up

bench=$BUILD_DIR/tests/runtime/docker/docker_bench
cmake --build "$BUILD_DIR" --target docker_bench >&2

state=${SANDBOX_STATE_DIR:-/var/lib/mcp-sandbox}
image=${SANDBOX_DOCKER_IMAGE:-}
archive=${SANDBOX_DOCKER_IMAGE_ARCHIVE:-}
if [ -z "$image" ]; then
  newest=$(ls -t "$state"/archives/python-*.tar 2>/dev/null | head -n 1 || true)
  if docker image inspect mcp-sandbox/python:latest >/dev/null 2>&1 || [ -n "$newest" ]; then
    image=mcp-sandbox/python:latest
    archive=${archive:-$newest}
  elif docker image inspect mcp-sandbox-test/python:bookworm >/dev/null 2>&1; then
    image=mcp-sandbox-test/python:bookworm
  else
    echo "n/a: no image (run \`mcp-sandbox image build\`, or set SANDBOX_DOCKER_IMAGE)"
    exit 0
  fi
fi
args=(--image "$image")
[ -z "$archive" ] || args+=(--archive "$archive")

# The same image, unpacked for the namespace backend (cached per image id).
if docker image inspect "$image" >/dev/null 2>&1 || [ -n "$archive" ]; then
  "$bench" "${args[@]}" --runs 1 --warm 1 >/dev/null  # loads the image if needed
  image_id=$(docker image inspect -f '{{.Id}}' "$image" | cut -d: -f2 | cut -c1-16)
  rootfs=$BUILD_DIR/bench/rootfs-$image_id
  if [ ! -d "$rootfs" ]; then
    log "unpacking $image for the namespace backend"
    rm -rf "$rootfs.tmp"; mkdir -p "$rootfs.tmp"
    cid=$(docker create "$image" /bin/true)
    docker export "$cid" | tar -C "$rootfs.tmp" -xf -
    docker rm "$cid" >/dev/null
    for dir in proc dev sys tmp mnt/data mnt/wheelhouse .sandbox; do mkdir -p "$rootfs.tmp/$dir"; done
    mv "$rootfs.tmp" "$rootfs"
  fi
  args+=(--rootfs "$rootfs")
fi
"$bench" "${args[@]}" --runs "${SANDBOX_BENCH_RUNS:-10}" --warm "${SANDBOX_BENCH_WARM:-200}"
