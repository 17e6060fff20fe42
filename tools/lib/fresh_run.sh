#!/usr/bin/env bash
# tools/lib/fresh_run.sh [WORK_DIR [CMD...]]: times tools/test (or CMD, run in the clone) as on
# a fresh machine, without wiping this machine's caches. A clean clone of this checkout's HEAD
# runs in a mount namespace of its own where every place tools/test and its scripts keep
# something between runs is an empty directory under WORK_DIR (default
# /srv/mcp-sandbox-fresh, made anew each run; not under /tmp or /var/tmp, which run-in-vm's
# guest mounts empty, so the VM tests would not find the clone's binaries):
#   $HOME                  ccache (~/.cache/ccache), the Debian root tarballs and the dist
#                          build roots' ccache (~/.cache/mcp-sandbox, SANDBOX_CACHE_DIR),
#                          clang-tidy's results (~/.cache/mcp-sandbox/clang-tidy), npm's cache
#                          (~/.npm), the VM's kernel (~/.cache/run-in-vm), pip's and Chromium's
#   /var/lib/mcp-sandbox   the image store (root's default state dir; some tests name it)
#   /run/containerd        so the Docker daemon below starts a containerd of its own
# and a Docker daemon of its own (tools/lib/dockerd.sh: DOCKER_HOST, SANDBOX_DOCKERD_DATA,
# SANDBOX_DOCKERD_STATE under WORK_DIR), started and stopped by tools/test beside any daemon
# already running. Every variable that points a cache elsewhere is unset. The Debian packages
# stay installed. Needs root and room for the build trees, the images and the Debian roots
# (several GB) under WORK_DIR. Prints the last lines, the stage times and the wall time; the
# whole output is in WORK_DIR/test.log.
set -euo pipefail
[ "$(id -u)" -eq 0 ] ||
  { echo "fresh_run.sh: needs root (a mount namespace, the store)" >&2; exit 1; }
source_root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/srv/mcp-sandbox-fresh}
shift || true
[ $# -gt 0 ] || set -- tools/test
case $work in
  /*) ;;
  *) echo "fresh_run.sh: WORK_DIR must be an absolute path" >&2; exit 1 ;;
esac
case $work/ in
  "$HOME"/*)
    echo "fresh_run.sh: WORK_DIR must lie outside \$HOME, which the run sees empty" >&2
    exit 1 ;;
  /tmp/* | /var/tmp/*)
    echo "fresh_run.sh: WORK_DIR must lie outside /tmp and /var/tmp: run-in-vm's guest mounts" \
      "them empty, so the VM tests could not run the clone's binaries" >&2
    exit 1 ;;
esac

# Only a directory this script made (its marker inside) is removed.
if [ -e "$work" ]; then
  [ -e "$work/.fresh-run" ] ||
    { echo "fresh_run.sh: $work exists and is not a fresh run's" >&2; exit 1; }
  rm -rf "$work"
fi
mkdir -p "$work"/{home,store,containerd,dockerd,docker-data}
touch "$work/.fresh-run"
git clone --quiet --no-hardlinks "$source_root" "$work/src"
# The VM tests (the cgroup v2 tiers, the systemd unit) boot ../shared/tools/run-in-vm, found
# beside the checkout: the clone gets the same neighbour, a link to the shared/ beside this
# checkout or, from a git worktree, beside its main checkout. Without one they skip.
for shared in "$source_root/../shared" \
    "$(dirname "$(git -C "$source_root" rev-parse --path-format=absolute --git-common-dir)")/../shared"; do
  if [ -x "$shared/tools/run-in-vm" ]; then
    ln -s "$(cd "$shared" && pwd)" "$work/shared"
    break
  fi
done
[ -e "$work/shared" ] ||
  echo "fresh_run.sh: no shared/tools/run-in-vm beside $source_root: the VM tests will skip" >&2
echo "fresh_run.sh: $* in a clone of $(git -C "$work/src" log --oneline -1 | cut -c1-60)" >&2
mkdir -p /var/lib/mcp-sandbox

started=$(date +%s)
rc=0
unshare --mount --propagation private -- env -u CCACHE_DIR -u CCACHE_CONFIGPATH \
  -u SANDBOX_CACHE_DIR -u SANDBOX_STATE_DIR -u SANDBOX_BUILD_DIR -u XDG_CACHE_HOME \
  -u XDG_STATE_HOME -u XDG_DATA_HOME -u npm_config_cache -u VM_CACHE \
  DOCKER_HOST="unix://$work/dockerd/docker.sock" \
  SANDBOX_DOCKERD_STATE="$work/dockerd" SANDBOX_DOCKERD_DATA="$work/docker-data" \
  bash -euc '
    work=$1
    mount --bind "$work/home" "$HOME"
    mount --bind "$work/store" /var/lib/mcp-sandbox
    [ ! -d /run/containerd ] || mount --bind "$work/containerd" /run/containerd
    cd "$work/src"
    shift
    exec "$@"' bash "$work" "$@" >"$work/test.log" 2>&1 || rc=$?
elapsed=$(( $(date +%s) - started ))
tail -n 5 "$work/test.log"
grep -E '^(stage |package: stage|idle builds:|background:)' "$work/test.log" || true
echo "fresh_run.sh: $* exited $rc after $elapsed s" \
  "($(( elapsed / 60 )) min $(( elapsed % 60 )) s); log: $work/test.log"
exit "$rc"
