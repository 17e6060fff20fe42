#!/usr/bin/env bash
# `mcp-sandbox serve` over stdio, as a hostile client drives it (issue #12): requests nested
# 100 000 deep get a parse error and the server goes on answering; a 1 MiB method name or
# session id comes back cut in an error of a few hundred bytes. No sandbox is started.
# Usage: hostile_json_test.sh /path/to/mcp-sandbox
set -u
bin=$1
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
export SANDBOX_CGROUP=none SANDBOX_STATE_DIR=$state/state
exec python3 - "$bin" <<'PY'
import json, subprocess, sys

server = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL)
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

server.stdin.close()
check("serve ends at the end of its input", server.wait(timeout=60) == 0)
sys.exit(fail)
PY
