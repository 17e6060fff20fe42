#!/usr/bin/env bash
# The README's `tools/run` as a first-time user meets it: it ends in a waiting MCP server on
# stdio that answers initialize, with nothing but protocol on stdout (the build and the image
# step log to stderr). Usage: tools_run_test.sh REPO_ROOT BUILD_DIR
set -u
root=$1
export SANDBOX_BUILD_DIR=$2
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: tools/run installs packages and builds the image as root here"
  exit 77
fi
fail=0
check() {  # check NAME CONDITION-RESULT DETAIL
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fail=1; fi
}
err=$(mktemp)
trap 'rm -f "$err"' EXIT
request='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tools-run-test","version":"1"}}}'
# stdin: one request, then EOF, on which the server tears down and exits 0.
out=$(printf '%s\n' "$request" | timeout 600 "$root/tools/run" 2>"$err")
status=$?
check "tools/run exits 0 after stdin EOF" "$status" "exit $status; stderr: $(tail -5 "$err")"
lines=$(printf '%s\n' "$out" | grep -c . || true)
check "stdout has one line: the response" "$([ "$lines" -eq 1 ]; echo $?)" "$lines lines: $out"
printf '%s' "$out" | python3 -c '
import json, sys
response = json.loads(sys.stdin.read())
assert response["id"] == 1, response
assert response["result"]["serverInfo"]["name"] == "mcp-sandbox", response
assert response["result"]["protocolVersion"] == "2025-11-25", response
'
check "the response is the server's initialize result" $? "$out"
# The image step ran (on stderr): "python is up to date ..." or "python  <digest> ... built in".
grep -qE '^python (is up to date| +[0-9a-f]{12} )' "$err"
check "the image step ran, on stderr" $? "$(tail -5 "$err")"
"$SANDBOX_BUILD_DIR/mcp-sandbox" image ls 2>/dev/null | grep -q '^python '
check "the default image is in the store afterwards" $? "$("$SANDBOX_BUILD_DIR/mcp-sandbox" image ls 2>&1)"
exit $fail
