# shellcheck shell=bash disable=SC2034 # the variables set here are the sourcing test's
# tests/cli/lib.sh: what the command line's shell tests share. Sourced, never run:
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
