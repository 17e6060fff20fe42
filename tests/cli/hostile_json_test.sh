#!/usr/bin/env bash
# `mcp-sandbox serve` over stdio, as a hostile client drives it (issue #12): requests nested
# 100 000 deep get a parse error and the server goes on answering; a 1 MiB method name or
# session id comes back cut in an error of a few hundred bytes, and the server's log (json format)
# stays small and one valid JSON object a line. No sandbox is started.
# Usage: hostile_json_test.sh /path/to/mcp-sandbox
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
export SANDBOX_CGROUP=none SANDBOX_STATE_DIR=$work/state SANDBOX_LOG_FORMAT=json
python3 - "$bin" "$work/server.log" <<'PY'
import json, subprocess, sys

log = open(sys.argv[2], "wb")
server = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=log)
fail = 0

def check(name, ok, detail=""):
    global fail
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if not ok:
        fail = 1

def send(line):
    try:
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()
    except BrokenPipeError:
        check("the server is still running", False, "exit status %r" % server.wait())
        sys.exit(1)

def answer():
    line = server.stdout.readline()
    return line, (json.loads(line) if line else None)

send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}}}))
line, reply = answer()
check("initialize is answered", reply is not None and "result" in reply, repr(line[:200]))
send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

deep = {"arrays": "[" * 100000 + "]" * 100000, "objects": '{"a":' * 100000 + "1" + "}" * 100000}
for kind, value in deep.items():
    send('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + value + "}}")
    line, reply = answer()
    check("100 000-deep %s: a parse error" % kind,
          reply is not None and reply.get("error", {}).get("code") == -32700, repr(line[:200]))
    send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    line, reply = answer()
    check("then a ping is answered", reply == {"jsonrpc": "2.0", "id": 2, "result": {}},
          repr(line[:200]))

huge = "x" * (1 << 20)
send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": huge}))
line, reply = answer()
check("a 1 MiB method name: -32601 under 1 KiB",
      reply is not None and reply["error"]["code"] == -32601 and len(line) < 1024, len(line))
send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                 "params": {"name": "sandbox_close_session", "arguments": {"session_id": huge}}}))
line, reply = answer()
check("a 1 MiB session_id: a tool error under 1 KiB",
      reply is not None and reply["result"].get("isError") is True and len(line) < 1024,
      "%d bytes: %r" % (len(line), line[:300]))

# Quotes, a backslash and a newline in what the log line echoes: SANDBOX_LOG_FORMAT=json writes
# messages unescaped, so the one quoting helper must keep them out.
for tool in ("sandbox_read_artifact", "sandbox_list_artifacts", "sandbox_read_file",
             "sandbox_session_status"):
    send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                     "params": {"name": tool, "arguments": {"session_id": huge + '"\\\n',
                                                            "path": "a.txt"}}}))
    line, reply = answer()
    check("%s with a 1 MiB session_id: under 1 KiB, no session_id echoed" % tool,
          reply is not None and len(line) < 1024 and
          "session_id" not in reply["result"].get("structuredContent", {}), line[:300])

server.stdin.close()
check("serve ends at the end of its input", server.wait(timeout=60) == 0)
log.close()
lines = open(sys.argv[2], "rb").read().splitlines()
size = sum(len(l) + 1 for l in lines)
check("the log of these calls is small (%d bytes)" % size, size < 16384, size)
def is_object(line):
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
bad = [l[:200] for l in lines if not is_object(l)]
check("every log line is one JSON object", not bad, repr(bad[:2]))
sys.exit(fail)
PY
