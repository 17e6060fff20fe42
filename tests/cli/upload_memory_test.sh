#!/usr/bin/env bash
# Server memory for one large upload over stdio (issue #12, item 6): the peak growth of a fresh
# `mcp-sandbox serve` while it takes a 40 MB sandbox_upload_file must stay within 2x the
# request's own size (the file in base64): the text and the decoded string, each held once.
# Before the fix it was 8.4x the file. Needs root and the small image in the store.
# Usage: upload_memory_test.sh /path/to/mcp-sandbox
set -u
bin=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (sandboxes of the shared store)"; exit 77; }
"$bin" image ls 2>/dev/null | grep -q '^python-small ' ||
  { echo "SKIPPED: the python-small image is not in the store (tools/test builds it)"; exit 77; }
export SANDBOX_IMAGE=python-small SANDBOX_LOG_LEVEL=warn
exec python3 - "$bin" <<'PY'
import base64, json, os, subprocess, sys

server = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
ids = iter(range(1, 1000))

def call(method, params):
    request_id = next(ids)
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    server.stdin.write(line.encode() + b"\n")
    server.stdin.flush()
    while True:
        message = json.loads(server.stdout.readline())
        if message.get("id") == request_id:
            return message

def memory():
    fields = {}
    with open("/proc/%d/status" % server.pid) as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                fields[key] = int(value.split()[0]) * 1024
    return fields

def upload(name, content, session=None):
    arguments = {"filename": name, "content": content}
    if session:
        arguments["session_id"] = session
    answer = call("tools/call", {"name": "sandbox_upload_file", "arguments": arguments})
    if answer.get("result", {}).get("isError") or "error" in answer:
        print("FAIL upload of %s: %s" % (name, json.dumps(answer)[:500]))
        sys.exit(1)
    return answer["result"]["structuredContent"]

call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "upload-memory-test", "version": "1"}})
session = upload("small.bin", "AAAA")["session_id"]
upload("warm.bin", base64.b64encode(os.urandom(1 << 20)).decode(), session)  # warm the path
with open("/proc/%d/clear_refs" % server.pid, "w") as f:
    f.write("5")  # resets VmHWM to the current RSS
before = memory()
size = 40_000_000
content = base64.b64encode(os.urandom(size)).decode()
upload("big.bin", content, session)
after = memory()
call("tools/call", {"name": "sandbox_close_session", "arguments": {"session_id": session}})
server.stdin.close()
server.wait(timeout=60)

growth = after["VmHWM"] - before["VmRSS"]
ratio = growth / len(content)
print("peak growth %.1f MB for a %.1f MB request (%.1f MB file): %.2fx the request, %.2fx the file"
      % (growth / 1e6, len(content) / 1e6, size / 1e6, ratio, growth / size))
if ratio > 2.2:
    print("FAIL the server held the upload more than twice over")
    sys.exit(1)
print("ok")
PY
