"""The sandboxes a test's servers have, as the host sees them (tests/cli/pool_test.sh,
pool_stop_test.sh): on the namespace backend the crash-safe records in the state dir, on the
Docker backend the containers whose owner label names one of the test's server processes. Pooled
sandboxes are included: they have records and containers like sessions."""
import json
import os
import subprocess


def records(state_dir, backend, server_pids):
    """By session id: the namespace backend's records in `state_dir` (session id -> init pid,
    0 until the sandbox's init runs), or for `backend` "docker" the containers, in any state,
    owned by a process in `server_pids` (session id -> container id)."""
    if backend == "docker":
        return containers(server_pids)
    out = {}
    folder = os.path.join(state_dir, "sessions")
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name)) as f:
                    out[name[:-5]] = json.load(f)["pid"]
            except (OSError, ValueError, KeyError):
                pass  # being written or removed just now
    return out


def containers(server_pids):
    """Session id -> container id of the sandbox containers a process in `server_pids` owns."""
    listed = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=mcp-sandbox.session", "--format",
         '{{.ID}} {{.Label "mcp-sandbox.session"}} {{.Label "mcp-sandbox.owner"}}'],
        capture_output=True, text=True)
    out = {}
    for line in listed.stdout.splitlines():
        container, session, owner = (line.split(" ") + ["", ""])[:3]
        # owner: "<boot id>/<pid namespace>/<pid>/<start time>" (runtime/docker/owner.h)
        fields = owner.split("/")
        if len(fields) == 4 and fields[2].isdigit() and int(fields[2]) in server_pids:
            out[session] = container
    return out
