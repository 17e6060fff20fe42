#!/usr/bin/env bash
# A rolling update keeps the sessions it drains (issue #36, defect 3): `serve --http` as a replica
# with a drain (SANDBOX_DRAIN_TIMEOUT_S=30, SANDBOX_DRAIN_IDLE_S=2) and hibernation on (the
# default) holds a session with a variable and a file; SIGTERM; the drain hibernates the idle
# session instead of closing it, the server exits 0 and leaves no sandbox; a new server on the
# same state dir under the same replica id (only the replica an id names resumes its save)
# resumes the session at its next call, with the variable and the file; and a session still
# open when the drain times out is
# saved by the stop and resumed by the next server. Needs root and the default image (`python`) in the shared
# store; runs against a private state dir that borrows the store's images read-only.
# With `docker`, the same on the Docker backend (tools/test starts the daemon and loads the
# default image): no container of the session is left either. No daemon: skipped, or failed
# where tools/test requires the Docker half (SANDBOX_TEST_REQUIRE_DOCKER=1).
# Usage: drain_resume_test.sh /path/to/mcp-sandbox [namespace|docker]
set -u
bin=$1
backend=${2:-namespace}
work_template=/tmp/mcp-drain-resume-test.XXXXXX
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" python
[ "$backend" != docker ] || skip_unless_docker
borrow_shared_store "$bin" "$work/state"
token=drain-resume-token

# start LOG ENV...: a replica on the state dir; sets pid and port (from its log line).
start() {
  local log=$1
  shift
  env SANDBOX_POOL_SIZE=0 SANDBOX_IMAGE=python SANDBOX_BACKEND="$backend" \
    SANDBOX_AUTH_TOKEN=$token SANDBOX_DRAIN_TIMEOUT_S=30 SANDBOX_DRAIN_IDLE_S=2 "$@" \
    "$bin" serve --http 127.0.0.1:0 2>"$log" &
  pid=$!
  port=""
  for _ in $(seq 300); do
    port="$(sed -n 's#.*listening on http://127.0.0.1:\([0-9]*\)/mcp.*#\1#p' "$log")"
    [[ -n "$port" ]] && return 0
    sleep 0.1
  done
  echo "server did not start:"; cat "$log"; exit 1
}

# mcp PORT TOOL JSON-ARGUMENTS: initializes an MCP session over Streamable HTTP, calls the tool,
# and prints its structuredContent (or its error text, prefixed "ERROR ").
mcp() {
  python3 - "$@" "$token" <<'PY'
import json, sys, urllib.request

port, tool, arguments, token = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
url = f"http://127.0.0.1:{port}/mcp"
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "Authorization": f"Bearer {token}"}


def post(message):
    request = urllib.request.Request(url, json.dumps(message).encode(), headers)
    with urllib.request.urlopen(request, timeout=180) as response:
        body = response.read().decode()
        if "id" not in message:
            return response, None
        if response.headers.get_content_type() == "text/event-stream":
            for line in body.splitlines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                    if data.get("id") == message["id"]:
                        return response, data
            raise SystemExit(f"no answer in the stream: {body}")
        return response, json.loads(body)


response, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "drain-resume-test", "version": "1"}}})
headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
headers["MCP-Protocol-Version"] = "2025-11-25"
post({"jsonrpc": "2.0", "method": "notifications/initialized"})
_, answer = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": tool, "arguments": arguments}})
result = answer["result"]
if result.get("isError"):
    print("ERROR " + " ".join(item.get("text", "") for item in result["content"]))
else:
    print(json.dumps(result["structuredContent"]))
PY
}

# field NAME OUTPUT: a member of mcp's structuredContent, or its error line as it is.
field() {
  python3 -c '
import json, sys
try:
    print(json.loads(sys.argv[1]).get(sys.argv[2], ""))
except ValueError:
    print(sys.argv[1])' "$2" "$1"
}

# Waits (at most 60 s) for the server to exit; sets status to its exit status.
stopped() {
  status="still running"
  for _ in $(seq 600); do
    if ! kill -0 "$pid" 2>/dev/null || [[ "$(ps -o stat= -p "$pid")" == Z* ]]; then
      status=0
      wait "$pid" || status=$?
      pid=""
      return 0
    fi
    sleep 0.1
  done
}

start "$work/first.log" SANDBOX_REPLICA_ID=r1
made=$(mcp "$port" sandbox_run_python \
  '{"code": "v = \"kept across the drain\"\nopen(\"/mnt/data/f.txt\", \"w\").write(\"the file\")"}')
id=$(field session_id "$made")
[[ "$id" == sess_r1_* ]] || { echo "no session: $made"; cat "$work/first.log"; exit 1; }
kill -TERM "$pid"
stopped
check "the drained server exits 0" 0 "$status"
grep -q "session $id hibernated" "$work/first.log"
check "the drain hibernated the idle session" 0 $?
grep -q "session $id closed" "$work/first.log"
check "the drain did not close it" 1 $?
check "its saved state is on disk" 0 "$([ -f "$work/state/hibernated/$id/state.tar" ]; echo $?)"
if [ "$backend" = docker ]; then
  check "no container of the session is left" "" "$(docker ps -aq --filter "name=mcp-sandbox-$id")"
else
  check "no sandbox record is left" 0 "$(find "$work/state/sessions" -name '*.json' 2>/dev/null | wc -l)"
fi

# A sibling on the same state dir leaves the save alone (only the replica an id names resumes
# it, so a session is never live twice); the replica replaced under its id resumes it.
start "$work/sibling.log" SANDBOX_REPLICA_ID=r2
ran=$(mcp "$port" sandbox_run_python "{\"session_id\": \"$id\", \"code\": \"print(v)\"}")
check "a sibling answers replica_unavailable" 1 "$(echo "$ran" | grep -c 'lived on replica r1')"
kill -TERM "$pid"
stopped
check "the sibling left the save on disk" 0 "$([ -f "$work/state/hibernated/$id/state.tar" ]; echo $?)"

start "$work/second.log" SANDBOX_REPLICA_ID=r1
ran=$(mcp "$port" sandbox_run_python "{\"session_id\": \"$id\", \"code\": \"print(v, open('/mnt/data/f.txt').read())\"}")
check "the new server resumes it with the variable and the file" "kept across the drain the file" \
  "$(field stdout "$ran" | tr -d '\n')"
check "the result says it resumed" True "$(field resumed "$ran")"
closed=$(mcp "$port" sandbox_close_session "{\"session_id\": \"$id\"}")
check "it closes" "" "$(echo "$closed" | grep '^ERROR' || true)"
kill -TERM "$pid"
stopped
check "the second server exits 0" 0 "$status"

# The drain's time-out stops what is left as any orderly stop does: saved, then resumed.
start "$work/third.log" SANDBOX_REPLICA_ID=r3 SANDBOX_DRAIN_TIMEOUT_S=2 SANDBOX_DRAIN_IDLE_S=600
made=$(mcp "$port" sandbox_run_python '{"code": "w = \"left at the time-out\""}')
id=$(field session_id "$made")
kill -TERM "$pid"
stopped
check "the server whose drain timed out exits 0" 0 "$status"
grep -q "drain: drain time-out reached with 1 session(s) left" "$work/third.log"
check "its drain timed out" 0 $?
start "$work/fourth.log" SANDBOX_REPLICA_ID=r3
ran=$(mcp "$port" sandbox_run_python "{\"session_id\": \"$id\", \"code\": \"print(w)\"}")
check "the session left at the time-out is resumed" "left at the time-out" "$(field stdout "$ran" | tr -d '\n')"
closed=$(mcp "$port" sandbox_close_session "{\"session_id\": \"$id\"}")
check "it closes" "" "$(echo "$closed" | grep '^ERROR' || true)"
kill -TERM "$pid"
stopped
check "the last server exits 0" 0 "$status"
if [ "$fail" != 0 ]; then
  for log in first sibling second third fourth; do
    echo "--- $log server:"
    cat "$work/$log.log" 2>/dev/null
  done
fi
exit $fail
