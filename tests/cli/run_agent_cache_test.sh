#!/usr/bin/env bash
# The worker's byte code for one-shot runs (issue #41, tools/cli/run_agent_cache.h): the first
# run of an image compiles worker.py once in a sandbox of its own and keeps a copy of the agent
# dir with worker.pyc (the user's own, not writable by others); later runs start one sandbox,
# whose worker runs from the byte code, with the same output, tracebacks and exit codes. A copy
# others may write is not used (made again); one whose byte code does not start is forgotten and
# the run starts on the plain agent dir. Needs root (the shared store), strace and the small
# image.
# Usage: run_agent_cache_test.sh /path/to/mcp-sandbox
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
one_shot_store_setup "$bin" "sandboxes of the shared store"
root=$SANDBOX_STATE_DIR/probe-cache/agent.$(id -u)

run_counting_sandboxes() {  # prints "<output>|<sandboxes started>"
  local out
  out=$(strace -f -qq -e trace=clone3 -o "$work/strace" "$bin" run --image "$image" - \
    <<<'print(6 * 7)' 2>/dev/null)
  echo "$out|$(grep -c 'CLONE_NEWUSER' "$work/strace")"
}
kept() { find "$root" -mindepth 1 -maxdepth 1 2>/dev/null | sort; }

check "the first run compiles in a sandbox of its own, then runs" "42|2" \
  "$(run_counting_sandboxes)"
dir=$(kept)
check "and keeps one copy" 1 "$(kept | wc -l)"
check "the user's own, not writable by others" "$(id -u) 755 $(id -u) 644" \
  "$(stat -c '%u %a' "$dir") $(stat -c '%u %a' "$dir/worker.pyc")"
check "with the agent's files and the byte code" "key sandbox-init session_state.py worker.py worker.pyc" \
  "$(find "$dir" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"
check "the next run starts one sandbox" "42|1" "$(run_counting_sandboxes)"

# The worker runs from the byte code, and its results are those from source: output, the
# traceback without the worker's frames, exit codes, the last expression's repr, stdin.
check "the worker runs worker.pyc" "/.sandbox/worker.pyc" \
  "$("$bin" run --image "$image" - <<<'print(open("/proc/self/cmdline").read().split(chr(0))[2])')"
err=$("$bin" run --image "$image" - 2>&1 >/dev/null <<<'def f():
    raise ValueError("x")
f()')
check "a traceback shows the cell's frames only" 'Traceback (most recent call last):
  File "<cell-1>", line 3, in <module>
    f()
    ~^^
  File "<cell-1>", line 2, in f
    raise ValueError("x")
ValueError: x' "$err"
"$bin" run --image "$image" - >/dev/null 2>&1 <<<'import sys; sys.exit(3)'
check "sys.exit's code is the exit code" 3 $?
check "the last expression's repr" "'ab'" "$("$bin" run --image "$image" - <<<'"a" + "b"')"
check "__name__ of the cell" "__main__" "$("$bin" run --image "$image" - <<<'print(__name__)')"

# A copy others may write is not used: made again, the user's own.
chmod 0777 "$dir"
check "a copy others may write is made again" "42|2" "$(run_counting_sandboxes)"
check "and is the user's own again" 755 "$(stat -c '%a' "$dir")"

# Byte code that does not start (here: another Python's magic number): the sandbox does not
# start on it, the copy is forgotten and the run starts on the plain agent dir.
printf 'garbage that is no byte code' >"$dir/worker.pyc"
check "a copy whose byte code does not start: the run retries on the plain agent" "42|2" \
  "$(run_counting_sandboxes)"
check "and forgets the copy" 0 "$(kept | wc -l)"
check "the next run makes it again" "42|2" "$(run_counting_sandboxes)"
check "nothing half made is left" "$dir" "$(kept)"

# An ordinary user (the CI recipe's), here nobody with a state dir of its own borrowing the same
# images: its own copy, and its sandboxes run the byte code too.
if command -v setpriv >/dev/null; then
  chmod 711 "$work"
  mkdir -p "$work/user/state"
  for part in images archives; do ln -s "$SANDBOX_STATE_DIR/$part" "$work/user/state/$part"; done
  chown -R 65534:65534 "$work/user"
  as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work/user" \
      SANDBOX_STATE_DIR="$work/user/state" "$bin" run --image "$image" - 2>/dev/null
  }
  check "as an ordinary user, the first run" 42 "$(as_nobody <<<'print(6 * 7)')"
  check "the next runs the byte code" "/.sandbox/worker.pyc" \
    "$(as_nobody <<<'print(open("/proc/self/cmdline").read().split(chr(0))[2])')"
  check "from the user's own copy" "65534 755" \
    "$(stat -c '%u %a' "$work"/user/state/probe-cache/agent.65534/*)"
else
  echo "skip the ordinary user: no setpriv (util-linux)"
fi
exit $fail
