#!/usr/bin/env bash
# `sessions gc` (the orphan sweep every server also runs when it starts) beside a live server on
# the same state dir, while that server creates sessions as fast as clients ask: the sweep must
# take none of them. A sandbox being started is a live server's from its first trace: its record
# goes down before its cgroup, and the cgroup sweep reads a group's record after listing the
# groups. Before that, a sweep during a burst removed cgroups mid-start (ENOENT on
# memory.limit_in_bytes or cgroup.procs) and sessions failed to start. Needs root and the
# default image (`python`) in the shared store; a private state dir borrows its images.
# Usage: sweep_beside_live_test.sh /path/to/mcp-sandbox /path/to/http_load_bench
set -u
bin=$1
load_bench=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/lib/http_server_url.sh"
work_template=/tmp/mcp-sweep-test.XXXXXX
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" python
borrow_shared_store "$bin" "$work/state"
export SANDBOX_IMAGE=python SANDBOX_LOG_FILE=

# The cgroup parent groups of this state dir's servers (doctor names them; a sweep removes them
# whenever the server has no session, and the server makes them again for its next one).
parents=$("$bin" doctor --json 2>/dev/null |
  python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)["cgroup"].get("parents", [])))')

SANDBOX_POOL_SIZE=0 SANDBOX_MAX_SESSIONS=100 SANDBOX_LOG_LEVEL=info \
  "$bin" serve --http 127.0.0.1:0 2>"$work/server.log" &
pid=$!
url=$(http_server_url "$work/server.log")
[ -n "$url" ] || { echo "FAIL the server did not listen: $(tail -5 "$work/server.log")"; exit 1; }

# The server has no session yet, so a sweep removes its cgroup parents as unused (as the stop of
# another server of this state dir would): its next create must make them again.
"$bin" sessions gc >/dev/null 2>&1
left=""
for dir in $parents; do [ -d "$dir" ] && left+="$dir "; done
check "a sweep removes the cgroup parents of a live server with no session" "" "$left"
out=$("$load_bench" "$url" --sessions 1 --calls 1 --creates 1 2>&1)
check "its next session starts all the same (errors, not set up)" "0 0" \
  "$(awk '/^Native clients:/ {print $3, $5}' <<<"$out")"

# The sweeper: `sessions gc` again and again, each a full sweep of records and cgroups (until
# told to stop, or the scratch dir is gone).
(
  while [ -d "$work" ] && [ ! -e "$work/stop" ]; do
    SANDBOX_LOG_LEVEL=info "$bin" sessions gc >>"$work/gc.log" 2>&1
    echo run >>"$work/gc.runs"
  done
) &
sweeper=$!

# Three bursts of 30 creates (a sweep lasts about as long as a few creates under load).
out=
for _ in 1 2 3; do out+=$("$load_bench" "$url" --sessions 30 --calls 3 --creates 1 2>&1)$'\n'; done
touch "$work/stop"
wait "$sweeper"
runs=$(wc -l <"$work/gc.runs" 2>/dev/null || echo 0)
read -r errors not_set_up < <(awk '/^Native clients:/ {e += $3; n += $5} END {print e, n}' <<<"$out")
check "90 sessions start and answer while sessions gc sweeps ($runs sweeps): errors, not set up" \
  "0 0" "$errors $not_set_up"
[ "$errors $not_set_up" = "0 0" ] || grep 'not set up:' <<<"$out" | head -3
check "the sweeps ran during the burst (at least 3)" yes "$([ "$runs" -ge 3 ] && echo yes || echo "$runs")"
check "no sweep took a live server's sandbox" "" "$(grep 'swept orphan' "$work/gc.log" | head -3)"

kill -TERM "$pid"
wait "$pid"
pid=
check "the server's stop leaves no session record" "" "$(find "$work/state/sessions" -mindepth 1 2>/dev/null | head -3)"
left=""
for dir in $parents; do [ -d "$dir" ] && left+="$dir "; done
check "nor a cgroup parent of its state dir ($(wc -w <<<"$parents") hierarchies)" "" "$left"
# A server killed with SIGKILL cannot remove its parents (made here as it would leave them):
# `sessions gc` does.
for dir in $parents; do mkdir -p "$dir"; done
"$bin" sessions gc >/dev/null 2>&1
left=""
for dir in $parents; do [ -d "$dir" ] && left+="$dir "; done
check "sessions gc removes an unused cgroup parent of its state dir" "" "$left"
exit $fail
