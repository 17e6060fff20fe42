#!/usr/bin/env bash
# The Quick start's `tools/run` as a first-time user meets it: it ends in a waiting MCP server on
# stdio that answers initialize, with nothing but protocol on stdout (the build and the image
# step log to stderr). The image builds in the background while the server compiles; when it
# fails the server starts anyway and stderr says why. Usage: tools_run_test.sh REPO_ROOT BUILD_DIR
set -u
root=$1
export SANDBOX_BUILD_DIR=$2
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: tools/run installs packages and builds the image as root here"
  exit 77
fi
source "$(dirname "$0")/lib.sh"
err=$work/stderr
request='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tools-run-test","version":"1"}}}'

# check_initialize_answered NAME OUT: stdout is one line, the server's initialize result.
check_initialize_answered() {
  local lines
  lines=$(printf '%s\n' "$2" | grep -c . || true)
  check "$1: stdout has one line, the response" 1 "$lines"
  printf '%s' "$2" | python3 -c '
import json, sys
response = json.loads(sys.stdin.read())
assert response["id"] == 1, response
assert response["result"]["serverInfo"]["name"] == "mcp-sandbox", response
assert response["result"]["protocolVersion"] == "2025-11-25", response
'
  check "$1: the response is the server's initialize result" 0 $?
}

# stdin: one request, then EOF, on which the server tears down and exits 0.
out=$(printf '%s\n' "$request" | timeout 600 "$root/tools/run" 2>"$err")
check "tools/run exits 0 after stdin EOF" 0 "$?"
check_initialize_answered "tools/run" "$out"
# The image step ran (on stderr): "python is up to date ..." or "python  <digest> ... built in".
grep -qE '^python (is up to date| +[0-9a-f]{12} )' "$err"
check "the image step ran, on stderr" 0 "$?"
"$SANDBOX_BUILD_DIR/mcp-sandbox" image ls 2>/dev/null | grep -q '^python '
check "the default image is in the store afterwards" 0 "$?"

# The builder tools/run starts is `image build` itself: the same usage, the same cache verdict.
check "mcp-sandbox-image-build is image build: the same --help" \
  "$("$SANDBOX_BUILD_DIR/mcp-sandbox" image build --help)" \
  "$("$SANDBOX_BUILD_DIR/mcp-sandbox-image-build" --help)"
check "mcp-sandbox-image-build is image build: the same verdict on the built image" \
  "$("$SANDBOX_BUILD_DIR/mcp-sandbox" image build 2>&1)" \
  "$("$SANDBOX_BUILD_DIR/mcp-sandbox-image-build" 2>&1)"

# A store the image cannot be built in (a directory under /proc cannot be made): a real
# failure of the background half. The server still starts and answers; stderr says what failed.
out=$(printf '%s\n' "$request" | SANDBOX_STATE_DIR=/proc/no-such-store timeout 600 \
  "$root/tools/run" 2>"$err")
check "a failed image build: tools/run still exits 0" 0 "$?"
check_initialize_answered "a failed image build" "$out"
grep -q '^the default image could not be built (exit 1)' "$err"
check "a failed image build: stderr says so" 0 "$?"
grep -q '/proc/no-such-store/archives' "$err"
check "a failed image build: stderr shows the builder's own error" 0 "$?"
[ "$fail" -ne 0 ] && tail -20 "$err"
exit $fail
