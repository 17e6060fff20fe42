#!/usr/bin/env bash
# `mcp-sandbox run` as a CI runner uses it: exit codes (the snippet's own, 124 timeout, 137
# killed), live output, --json, --shell. Usage: run_command_test.sh /path/to/mcp-sandbox
set -u
bin=$1
image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
if ! "$bin" image ls 2>/dev/null | grep -q "^$image "; then
  echo "SKIPPED: image $image is not in the store (tools/test builds it)"
  exit 77
fi
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

out=$(echo 'print("hello"); raise SystemExit(3)' | "$bin" run --image "$image" - 2>/dev/null)
check "exit code is the snippet's" 3 $?
check "stdout streams through" hello "$out"

echo 'import time; time.sleep(30)' | "$bin" run --image "$image" --timeout 1 - >/dev/null 2>&1
check "timeout exits 124" 124 $?

echo 'b = bytearray(300 << 20); b[::4096] = b"x" * len(b[::4096])' |
  "$bin" run --image "$image" --memory 64m - >/dev/null 2>&1
check "memory limit kill exits 137" 137 $?

json=$(echo 'import sys; print("o"); print("e", file=sys.stderr); _ = open("/mnt/data/a.txt","w").write("x")' |
  "$bin" run --image "$image" --json -)
check "--json exit code" 0 $?
check "--json fields" "0|o
|e
|/mnt/data/a.txt" "$(python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["exit_code"], r["stdout"], r["stderr"], r["artifacts"][0]["path"], sep="|")' <<<"$json")"
# The egress object is the one sandbox_session_status and doctor report (egress_report.h), both ways.
egress_of() {  # egress_of [ALLOWLIST]: enabled|allow of `run --json`
  SANDBOX_EGRESS_ALLOW=${1:-} "$bin" run --image "$image" --json - <<<'print(1)' 2>/dev/null |
    python3 -c 'import json,sys; e=json.load(sys.stdin)["egress"]; print(e["enabled"], ",".join(e.get("allow", [])), "bytes" in e, sep="|")'
}
check "--json egress without an allowlist" "False||False" "$(egress_of)"
check "--json egress with an allowlist" "True|pypi.org|True" "$(egress_of pypi.org)"


out=$(echo 'id -u; exit 5' | "$bin" run --image "$image" --shell - 2>/dev/null)
check "--shell exit code" 5 $?
check "--shell runs as uid 1000" 1000 "$out"

"$bin" run --bogus - >/dev/null 2>&1
check "unknown flag exits 2" 2 $?
exit $fail
