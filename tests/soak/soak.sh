#!/usr/bin/env bash
# One soak run: starts `mcp-sandbox serve --http` with a state dir of its own, runs soak_client
# against it (CLIENTS clients calling continuously for SECONDS), samples the server every
# INTERVAL seconds (RSS, fds, threads; sessions recorded, session cgroups, sandbox processes),
# stops the server and checks that nothing is left behind. Prints markdown.
# Fails on a call error, a leftover, or (runs of 10 samples or more) resources that grow.
#
# usage: soak.sh MCP_SANDBOX SOAK_CLIENT SECONDS CLIENTS INTERVAL
set -uo pipefail
source "$(dirname "$0")/../../tools/lib/http_server_url.sh"
source "$(dirname "$0")/../../tools/lib/backend_usable.sh"
bin=$1 client=$2 seconds=$3 clients=$4 interval=$5
if ! backend_usable "$bin"; then
  echo "skipped: no sandbox backend on this host (mcp-sandbox doctor)"; exit 77
fi

# The images come from the usual store; records and cgroups are this run's own, so counts are.
state=$(mktemp -d /tmp/soak-state.XXXXXX)
store=$("$bin" image ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state_dir"])')
mkdir -p "$state"
ln -s "$store/images" "$state/images"
log=$state.log
cleanup() { rm -rf "$state" "$log"; }
trap cleanup EXIT

SANDBOX_STATE_DIR=$state SANDBOX_MAX_SESSIONS=$((clients * 2 + 10)) SANDBOX_LOG_FILE='' \
  "$bin" serve --http 127.0.0.1:0 2>"$log" &
server=$!
url=$(http_server_url "$log")
if [ -z "$url" ]; then
  echo "soak: the server did not start:"; cat "$log"; exit 1
fi

# Processes below the server (sandboxes, their init and workers), the server not counted.
descendants() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END { n = 0; for (p in parent) { q = p; while (q in parent && q != root && q > 1) q = parent[q];
                                     if (q == root && p != root) n++ } print n }'
}
# The cgroups of this server's sessions: the subgroups of the parent its state dir names
# (CgroupOwnerFor: "mcp-sandbox-" and the FNV-1a hash of the path), in every hierarchy.
owner=$(python3 -c '
import sys
h = 14695981039346656037
for c in sys.argv[1].encode():
    h = ((h ^ c) * 1099511628211) % 2**64
print("mcp-sandbox-%012x" % (h & 0xffffffffffff))' "$state")
session_cgroups() {
  find /sys/fs/cgroup -mindepth 2 -maxdepth 4 -type d -path "*/$owner/*" 2>/dev/null |
    grep -c -v '/server$' || true
}
records() { ls "$state/sessions" 2>/dev/null | grep -c . || true; }
sample() {
  local label=$1
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$label" \
    "$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$server/status)" \
    "$(ls /proc/$server/fd | wc -l)" "$(awk '/Threads/ {print $2}' /proc/$server/status)" \
    "$(records)" "$(session_cgroups)" "$(descendants $server)"
}

echo "| at | server RSS MiB | fds | threads | sessions recorded | session cgroups | sandbox processes |"
echo "|---|---|---|---|---|---|---|"
sample "start" | tee "$state.samples"
"$client" "$url" --clients "$clients" --seconds "$seconds" > "$state.client" &
client_pid=$!
elapsed=0
while kill -0 "$client_pid" 2>/dev/null; do
  sleep 1; elapsed=$((elapsed + 1))
  if [ $((elapsed % interval)) -eq 0 ]; then sample "${elapsed} s" | tee -a "$state.samples"; fi
done
wait "$client_pid"; client_rc=$?
sleep 1
sample "end (idle)" | tee -a "$state.samples"
echo
cat "$state.client"
echo

kill -TERM "$server"; wait "$server"; server_rc=$?
failures=()
[ "$client_rc" -eq 0 ] || failures+=("calls failed (soak_client exit $client_rc)")
[ "$server_rc" -eq 0 ] || failures+=("the server exited $server_rc on SIGTERM")
left=$(pgrep -c -f -- "$state" || true)
[ "$left" -eq 0 ] || failures+=("$left process(es) still name the state dir")
[ "$(records)" -eq 0 ] || failures+=("$(records) session record(s) left")
left_cgroups=$(session_cgroups)
[ "$left_cgroups" -eq 0 ] || failures+=("$left_cgroups cgroup(s) left")

# Flat resources: from the first sample after the first interval (warmed up) to the last one
# under load, fds and threads grow by at most 10 % (+5), RSS by at most 25 %.
python3 - "$state.samples" <<'PY' || failures+=("resources grew under a steady load")
import sys
rows = [l.split('|')[1:-1] for l in open(sys.argv[1]) if l.startswith('|')]
load = [[float(c) for c in r[1:4]] for r in rows[1:-1]]
if len(load) < 10:
    sys.exit(0)  # too short a run to judge growth
first, last = load[0], load[-1]
grew = [name for name, a, b, slack in (("RSS", first[0], last[0], 0.25),
                                        ("fds", first[1], last[1], 0.10),
                                        ("threads", first[2], last[2], 0.10))
        if b > a * (1 + slack) + (0 if name == "RSS" else 5)]
if grew:
    print("grew: " + ", ".join(grew))
    sys.exit(1)
print("flat: RSS %.1f -> %.1f MiB, fds %d -> %d, threads %d -> %d" %
      (first[0], last[0], first[1], last[1], first[2], last[2]))
PY
rm -f "$state.samples" "$state.client"
if [ ${#failures[@]} -gt 0 ]; then
  printf 'soak: FAILED: %s\n' "${failures[@]}"
  echo "server log (last lines):"; tail -30 "$log"
  exit 1
fi
echo "soak: no error, nothing left behind."
