#!/usr/bin/env bash
# `serve` starts its sandboxes on the worker's byte code kept per image (issue #41,
# tools/cli/run_agent_cache.h), as `run` does: at its start it compiles the default image's copy
# when missing, in a sandbox of its own that is not counted as a session; its pool's and its
# cold sessions' workers then run worker.pyc. A copy that is not this user's own for this image
# and agent (others may write it, or its key names another image or agent) is refused: the
# sandbox starts on the plain agent dir. A copy whose byte code does not start is forgotten.
# Needs root (the shared store) and the small image.
# Usage: run_agent_cache_serve_test.sh /path/to/mcp-sandbox
set -u
bin=$1
image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" "$image"
borrow_shared_store "$bin" "$work/state"
export SANDBOX_BACKEND=namespace SANDBOX_IMAGE=$image SANDBOX_POOL_SIZE=1 SANDBOX_LOG_LEVEL=error
export PYTHONPATH=$root/tests/support${PYTHONPATH:+:$PYTHONPATH}
python3 - "$bin" "$SANDBOX_STATE_DIR/probe-cache/agent.$(id -u)" <<'PY'
import os, re, sys, time

import mcp_stdio

BIN, KEPT = sys.argv[1], sys.argv[2]
# What the worker process was started with: its script is argv[2] (`python3 -u SCRIPT`).
SCRIPT = 'print(open("/proc/self/cmdline").read().split(chr(0))[2])'
failures = []


def check(what, expected, got):
    ok = expected == got
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": %r, expected %r" % (got, expected)))
    if not ok:
        failures.append(what)


def kept():
    return sorted(os.listdir(KEPT)) if os.path.isdir(KEPT) else []


def script_of(server, **options):
    """The worker's script in a new session (from the pool unless `options` ask otherwise)."""
    session = server.tool("sandbox_create_session", **options)
    if "session_id" not in session:
        return "no session: %s" % session
    ran = server.tool("sandbox_run_python", session_id=session["session_id"], code=SCRIPT)
    server.tool("sandbox_close_session", session_id=session["session_id"])
    return ran.get("stdout", "").strip() or ran.get("stderr", "")


check("no copy before serve starts", [], kept())
server = mcp_stdio.Server(BIN, client_name="agent-cache-test")
check("serve keeps one copy for its default image at its start", 1, len(kept()))
copy = os.path.join(KEPT, kept()[0]) if kept() else KEPT
# The pool's sandbox may still be starting: the first session waits for it or starts cold.
check("a pooled session's worker runs the byte code", "/.sandbox/worker.pyc", script_of(server))
check("a cold session's worker runs it too", "/.sandbox/worker.pyc",
      script_of(server, memory_limit="256m"))
check("and the output is the snippet's", "42\n",
      server.tool("sandbox_run_python", code="print(6 * 7)",
                  session_id=server.tool("sandbox_create_session")["session_id"]).get("stdout"))

# A copy others may write: refused at each start, the sandbox takes the plain agent dir.
os.chmod(copy, 0o777)
check("a copy others may write is refused", "/.sandbox/worker.py",
      script_of(server, memory_limit="256m"))
os.chmod(copy, 0o755)
check("the copy the user's own again is used", "/.sandbox/worker.pyc",
      script_of(server, memory_limit="256m"))

# A copy whose key names another image (a stale or foreign one under this name): refused.
key_file = os.path.join(copy, "key")
key = open(key_file).read()
with open(key_file, "w") as out:
    out.write(re.sub(r"^rootfs=.*$", "rootfs=/another/image", key, flags=re.M))
check("a copy kept for another image is refused", "/.sandbox/worker.py",
      script_of(server, memory_limit="256m"))
with open(key_file, "w") as out:
    out.write(key)

# Byte code that does not start (another Python's magic number): that start fails, the copy
# is forgotten, and the next sandbox starts on the plain agent dir.
pyc = open(os.path.join(copy, "worker.pyc"), "rb").read()
with open(os.path.join(copy, "worker.pyc"), "wb") as out:
    out.write(b"garbage that is no byte code")
failed = server.tool("sandbox_create_session", memory_limit="256m")
check("a copy whose byte code does not start fails that start", False, "session_id" in failed)
check("and is forgotten", [], kept())
check("the next session starts on the plain agent dir", "/.sandbox/worker.py",
      script_of(server, memory_limit="256m"))
check("serve stops cleanly", 0, server.close())

# The next serve makes the copy again at its start.
server = mcp_stdio.Server(BIN, client_name="agent-cache-test")
check("the next serve keeps a copy again", 1, len(kept()))
check("and its sessions run it", "/.sandbox/worker.pyc", script_of(server, memory_limit="256m"))
check("serve stops cleanly", 0, server.close())

# A stop that kills its pool's starts (their workers not up yet) forgets nothing: the copy was
# not what failed them. (How many starts a stop meets varies: five stops, right after start.)
for _ in range(5):
    server = mcp_stdio.Server(BIN, env=dict(os.environ, SANDBOX_POOL_SIZE="4"),
                              client_name="agent-cache-test")
    server.close()
check("stops during the pool's starts keep the copy", 1, len(kept()))
sys.exit(1 if failures else 0)
PY
status=$?
[ "$fail" = 0 ] || status=1
exit $status
