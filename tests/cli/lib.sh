# shellcheck shell=bash disable=SC2034 # the variables set here are the sourcing test's
# tests/cli/lib.sh: what the command line's shell tests share (scratch dir, checks, skips, a
# borrowed store). Sourced, never run:
#   source "$(dirname "$0")/lib.sh"
# It makes $work, a scratch directory (mktemp -d, after the template in $work_template when the
# test sets one first), and at exit stops the process in $pid, if the test left one running
# (a server or a runner it started in the background), and removes $work. Works under `set -u`
# and `set -euo pipefail` alike (nothing in the exit trap may fail the test's exit status).

work=$(mktemp -d ${work_template:+"$work_template"})
pid=""
fail=0

# At exit: SIGTERM first, so a server or `run` tears down its sandboxes; SIGKILL after 5 s.
cli_test_cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cli_test_cleanup EXIT

# check NAME EXPECTED ACTUAL: one line, "ok" or "FAIL" with both values; a failure sets fail=1
# (the test ends with `exit $fail`).
check() {
  if [ "$2" = "$3" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1: expected [$2], got [$3]"
    fail=1
  fi
}

# metrics_url LOG: the URL a server's "metrics on http://..." line in LOG names, waiting up to
# 10 s for it; prints nothing when none came.
metrics_url() {
  local url=""
  for _ in $(seq 100); do
    url="$(sed -n 's#.*metrics on \(http://127.0.0.1:[0-9]*/metrics\).*#\1#p' "$1")"
    [[ -n "$url" ]] && break
    sleep 0.1
  done
  echo "$url"
}

# skip_unless_root WHY: exits 77 (skipped) unless root, saying why the test needs it.
skip_unless_root() {
  [ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root ($1)"; exit 77; }
}

# tidy_test_project DIR: for the clang-tidy result cache's tests, skips (77) unless clang-tidy,
# cmake and ninja are installed, makes DIR with the repository's .clang-tidy in it, and sets
# $script to tools/lib/clang_tidy_cached.py.
tidy_test_project() {
  local tool root
  for tool in clang-tidy cmake ninja; do
    command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed"; exit 77; }
  done
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  script=$root/tools/lib/clang_tidy_cached.py
  mkdir -p "$1"
  cp "$root/.clang-tidy" "$1/"
}

# skip_unless_docker: exits 77 (skipped) unless a Docker daemon answers; where tools/test
# requires the Docker half (SANDBOX_TEST_REQUIRE_DOCKER=1), a missing daemon is a failure.
skip_unless_docker() {
  command -v docker >/dev/null && timeout 10 docker version >/dev/null 2>&1 && return 0
  local why="no Docker daemon answers on ${DOCKER_HOST:-unix:///var/run/docker.sock} (tools/lib/dockerd.sh start)"
  if [ "${SANDBOX_TEST_REQUIRE_DOCKER:-}" = 1 ]; then
    echo "FAILED: a Docker test could not run where the daemon is required: $why"; exit 1
  fi
  echo "SKIPPED: $why"; exit 77
}

# skip_unless_image BIN NAME: exits 77 (skipped) unless NAME is in the store BIN sees (the
# store of SANDBOX_STATE_DIR, or the default one).
skip_unless_image() {
  "$1" image ls 2>/dev/null | grep -q "^$2 " ||
    { echo "SKIPPED: image $2 is not in the store (mcp-sandbox image build makes it)"; exit 77; }
}

# store_dir BIN: the state dir BIN uses for its image store (SANDBOX_STATE_DIR, else its default
# for this user), as BIN itself reports it, so the tests have no rule of their own for it.
store_dir() {
  "$1" image ls --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["state_dir"])'
}

# one_shot_store_setup BIN WHY: the opening of the one-shot run tests that count what a run
# starts: root (WHY says what for), the small image (SANDBOX_TEST_IMAGE_SMALL) in the store BIN
# sees, strace, and a private state dir under $work borrowing that store's images, run on the
# namespace backend. Sets image.
one_shot_store_setup() {
  image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
  skip_unless_root "$2"
  skip_unless_image "$1" "$image"
  command -v strace >/dev/null || { echo "SKIPPED: needs strace"; exit 77; }
  borrow_shared_store "$1" "$work/state"
  export SANDBOX_BACKEND=namespace
}

# borrow_shared_store BIN DIR: a private state dir at DIR whose images (and their docker
# archives) are those of the store BIN sees now (store_dir; SANDBOX_SHARED_STORE overrides),
# read-only by convention; exported as SANDBOX_STATE_DIR. Sessions, records and hibernated state
# stay in DIR. skip_unless_image looks in the same store, so the two never disagree.
borrow_shared_store() {
  local store part
  store=${SANDBOX_SHARED_STORE:-$(store_dir "$1")}
  mkdir -p "$2"
  for part in images archives; do
    [ -e "$store/$part" ] && ln -s "$store/$part" "$2/$part"
  done
  export SANDBOX_STATE_DIR=$2
}
