#!/usr/bin/env bash
# Server memory for one large upload over stdio (issue #12, item 6): the peak growth of a fresh
# `mcp-sandbox serve` while it takes a 40 MB sandbox_upload_file must stay within 2x the
# request's own size (the file in base64): the text and the decoded string, each held once.
# Before the fix it was 8.4x the file. Needs root and the small image in the store.
# Usage: upload_memory_test.sh /path/to/mcp-sandbox
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" python-small
export SANDBOX_IMAGE=python-small SANDBOX_LOG_LEVEL=warn
# The stdio client is tests/support/mcp_stdio.py.
export PYTHONPATH=$(cd "$(dirname "$0")/../support" && pwd)${PYTHONPATH:+:$PYTHONPATH}
python3 - "$bin" <<'PY'
import base64, os, sys

import mcp_stdio

server = mcp_stdio.Server(sys.argv[1], client_name="upload-memory-test")

def memory():
    fields = {}
    with open("/proc/%d/status" % server.proc.pid) as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                fields[key] = int(value.split()[0]) * 1024
    return fields

def upload(name, content, session=None):
    arguments = {"filename": name, "content": content}
    if session:
        arguments["session_id"] = session
    result = server.tool_result(server.send_tool("sandbox_upload_file", **arguments))
    if result["isError"]:
        print("FAIL upload of %s: %s" % (name, str(result)[:500]))
        sys.exit(1)
    return result

session = upload("small.bin", "AAAA")["session_id"]
upload("warm.bin", base64.b64encode(os.urandom(1 << 20)).decode(), session)  # warm the path
with open("/proc/%d/clear_refs" % server.proc.pid, "w") as f:
    f.write("5")  # resets VmHWM to the current RSS
before = memory()
size = 40_000_000
content = base64.b64encode(os.urandom(size)).decode()
upload("big.bin", content, session)
after = memory()
server.tool("sandbox_close_session", session_id=session)
server.close()

growth = after["VmHWM"] - before["VmRSS"]
ratio = growth / len(content)
print("peak growth %.1f MB for a %.1f MB request (%.1f MB file): %.2fx the request, %.2fx the file"
      % (growth / 1e6, len(content) / 1e6, size / 1e6, ratio, growth / size))
if ratio > 2.2:
    print("FAIL the server held the upload more than twice over")
    sys.exit(1)
print("ok")
PY
