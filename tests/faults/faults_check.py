#!/usr/bin/env python3
"""Faults produced for real against the real binary (issue #13, part 4): each proves that the
clients get a clear answer, that the server and the other sessions go on, and that nothing is
left behind — no process, cgroup, mount, session record, temp directory or container.

usage: faults_check.py MCP_SANDBOX SCENARIO
  server-kill      kill -9 of the server while sessions run code; `sessions gc`, then a
                   restarted server, leave nothing
  agent-stopped    a sandbox's agent stopped (SIGSTOP from the host): the call times out with a
                   clear error and the session is closed, not hung or left listed
  data-full        /mnt/data full: uploads and writes fail clearly, no partial file, and the
                   session goes on
  store-full       the state dir's filesystem (a small loop-mounted ext4) fills during an
                   image import: a clear error and no half image
  oom-20           20 sessions pass their memory limit at once: each reports oom, the server
                   and another session are unaffected
  docker-restart   the Docker daemon (one of this test's own) restarts under sessions: clear
                   sandbox_unavailable errors, new sessions once it is back, nothing leaked

Prints "ok NAME" or "FAIL NAME: why" per check and exits 1 when any failed, 77 (skipped, with
the reason) when the scenario cannot run here.
"""
import atexit
import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import mcp_stdio  # noqa: E402
import polling  # noqa: E402

BIN, SCENARIO = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
failures = []


def check(name, condition, detail=""):
    print(("ok   %s" % name) if condition else ("FAIL %s: %s" % (name, detail)), flush=True)
    if not condition:
        failures.append(name)
    return condition


def skip(reason):
    print("skipped: " + reason, flush=True)
    sys.exit(77)


def wait_until(predicate, timeout=30.0):
    return polling.wait_until(predicate, timeout)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes (its parent has not reaped it yet)
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pid):
    """Every process below `pid`, from /proc."""
    parents = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(stat.split("/")[2])] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def store_dir():
    out = subprocess.run([BIN, "image", "ls", "--json"], capture_output=True, text=True)
    return json.loads(out.stdout)["state_dir"]


def own_state_dir():
    """A state dir of this test's own (records and cgroups counted here are ours) that reads
    the images of the usual store."""
    state = tempfile.mkdtemp(prefix="faults-state-")
    atexit.register(subprocess.run, ["rm", "-rf", state])
    os.symlink(os.path.join(store_dir(), "images"), os.path.join(state, "images"))
    return state


def records(state):
    """{session id: record} of the sandboxes recorded in the state dir."""
    found = {}
    for path in glob.glob(os.path.join(state, "sessions", "*.json")):
        try:
            with open(path) as f:
                record = json.load(f)
            found[record["session_id"]] = record
        except (OSError, ValueError, KeyError):
            continue
    return found


def leftovers(state, session_ids, pids, cgroups):
    """What is left of sessions: live processes, cgroups, records, mounts, temp entries (saved
    sessions are not leftovers)."""
    left = []
    left += ["process %d" % pid for pid in sorted(pids) if alive(pid)]
    left += ["cgroup " + path for path in cgroups if os.path.isdir(path)]
    left += ["record " + sid for sid in records(state)]
    with open("/proc/self/mountinfo") as f:
        mounts = f.read()
    left += ["mount of " + sid for sid in session_ids if sid in mounts]
    if state in mounts:
        left.append("a mount under " + state)
    for sid in session_ids:
        left += ["temp entry " + path for path in glob.glob("/tmp/*%s*" % sid)]
        # state/hibernated/<id> is not a leftover: an orderly stop saves every live session
        # there on purpose (docs/sessions.md "Hibernate, resume, fork"); it holds no process, cgroup or
        # mount, and the next server resumes it.
        left += ["state entry " + path for path in glob.glob(os.path.join(state, "*", "*%s*" % sid))
                 if os.path.basename(os.path.dirname(path)) != "hibernated"]
    return left


def serve(state, *args, env=None):
    env = dict(env or os.environ, SANDBOX_STATE_DIR=state, SANDBOX_LOG_LEVEL="warn")
    return mcp_stdio.Server(BIN, env=env, args=args, client_name="faults-check")


def snapshot(server, state):
    """The processes, cgroups and ids of the server's sessions, from its records and /proc."""
    recorded = records(state)
    pids = descendants(server.proc.pid)
    cgroups = [path for record in recorded.values() for path in record.get("cgroups", [])]
    return list(recorded), pids, cgroups


def scenario_server_kill(env=None, containers=lambda: []):
    """kill -9 of a server whose sessions run code (a child process each, too); the namespace
    backend, or Docker when `env` names a daemon and `containers` lists its containers."""
    backend = "docker" if env else "namespace"
    state = own_state_dir()
    for how in ("sessions gc", "a restarted server"):
        server = serve(state, env=env)
        ids = [server.tool("sandbox_create_session")["session_id"] for _ in range(3)]
        for sid in ids:
            server.send_tool("sandbox_run_python", session_id=sid,
                             code="import subprocess, time\n"
                                  "subprocess.Popen(['sleep', '300'])\n"
                                  "print('running', flush=True); time.sleep(300)")
        check("%s, kill -9 (%s): the runs are under way" % (backend, how),
              wait_until(lambda: sum(1 for p in sleepers() if p not in before) >= 3),
              "no new sleep processes")
        session_ids, pids, cgroups = snapshot(server, state)
        pids |= set(p for p in sleepers() if p not in before)
        check("%s, kill -9 (%s): the sessions are known" % (backend, how),
              backend == "docker" or set(ids) <= set(session_ids),  # and the warm pool's
              "records %s" % session_ids)
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        if how == "sessions gc":
            out = subprocess.run([BIN, "sessions", "gc", "--state-dir", state],
                                 capture_output=True, text=True, env=env)
            check("%s, kill -9: sessions gc succeeds" % backend, out.returncode == 0, out.stderr)
        else:
            restarted = serve(state, env=env)
            sid = restarted.tool("sandbox_create_session")["session_id"]
            result = restarted.tool("sandbox_run_python", session_id=sid, code="print(6 * 7)")
            check("%s, kill -9: the restarted server runs a new session" % backend,
                  result.get("stdout") == "42\n", json.dumps(result)[:300])
            restarted.close()

        def left():
            return leftovers(state, session_ids, pids, cgroups) + \
                ["container " + c for c in containers()]
        check("%s, kill -9 then %s: nothing left" % (backend, how),
              wait_until(lambda: not left(), 20), left())


before = set()


def sleepers():
    """The `sleep 300` processes on this host (the runs' children)."""
    return {int(p.split("/")[2]) for p in glob.glob("/proc/[0-9]*/cmdline")
            if open_cmdline(int(p.split("/")[2])).strip() == "sleep 300"}


def open_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def scenario_agent_stopped():
    state = own_state_dir()
    server = serve(state)
    sid = server.tool("sandbox_create_session")["session_id"]
    other = server.tool("sandbox_create_session")["session_id"]
    session_ids, pids, cgroups = snapshot(server, state)
    init_pid = records(state)[sid]["pid"]
    os.kill(init_pid, signal.SIGSTOP)
    started = time.monotonic()
    result = server.tool_result(server.send_tool("sandbox_run_python", session_id=sid,
                                                 code="print(1)", timeout_s=2))
    took = time.monotonic() - started
    # The host waits the run's timeout plus AgentClient::kRunDeadlineGrace (30 s) at most.
    check("stopped agent: the call ends with sandbox_unavailable within the run's deadline",
          result["isError"] and result.get("error") == "sandbox_unavailable" and took < 45,
          "%.1f s: %s" % (took, json.dumps(result)[:300]))
    check("stopped agent: the error says the session is closed",
          "closed" in result.get("message", ""), result.get("message"))
    listed = server.tool("sandbox_list_sessions")
    listed_ids = [s.get("session_id") for s in listed.get("sessions", [])]
    check("stopped agent: the session is no longer listed, the other one is",
          sid not in listed_ids and other in listed_ids, listed_ids)
    status = server.tool_result(server.send_tool("sandbox_session_status", session_id=sid))
    check("stopped agent: its status is session_not_found",
          status.get("error") == "session_not_found", json.dumps(status)[:300])
    check("stopped agent: its init is gone", wait_until(lambda: not alive(init_pid), 10))
    result = server.tool("sandbox_run_python", session_id=other, code="print('still here')")
    check("stopped agent: another session runs", result.get("stdout") == "still here\n",
          json.dumps(result)[:300])
    server.close()
    left = leftovers(state, session_ids, pids, cgroups)
    check("stopped agent: nothing left after the server stops", not left, left)


def scenario_data_full():
    state = own_state_dir()
    server = serve(state)
    sid = server.tool("sandbox_create_session", disk_limit="16m")["session_id"]
    chunk = "A" * (10 << 20)
    import base64
    content = base64.b64encode(chunk.encode()).decode()
    first = server.tool_result(server.send_tool("sandbox_upload_file", session_id=sid,
                                                filename="first.bin", content_base64=content))
    check("/mnt/data full: a 10 MiB upload into 16 MiB succeeds", not first["isError"],
          json.dumps(first)[:300])
    second = server.tool_result(server.send_tool("sandbox_upload_file", session_id=sid,
                                                 filename="second.bin", content_base64=content))
    message = second.get("message", "")
    check("/mnt/data full: a second one fails with a clear error",
          second["isError"] and ("space" in message or "full" in message),
          json.dumps(second)[:300])
    written = server.tool_result(server.send_tool("sandbox_write_file", session_id=sid,
                                                  path="third.txt", content=chunk))
    check("/mnt/data full: sandbox_write_file fails with a clear error too",
          written["isError"] and ("space" in written.get("message", "") or
                                  "full" in written.get("message", "")),
          json.dumps(written)[:300])
    listing = server.tool("sandbox_list_artifacts", session_id=sid)
    names = sorted(f.get("path", "").rsplit("/", 1)[-1] for f in listing.get("files", []))
    check("/mnt/data full: no partial file is left", names == ["first.bin"], names)
    result = server.tool("sandbox_run_python", session_id=sid,
                         code="import os; os.remove('/mnt/data/first.bin'); "
                              "open('/mnt/data/ok.txt', 'w').write('fine'); print('usable')")
    check("/mnt/data full: the session goes on and can free space",
          result.get("stdout") == "usable\n", json.dumps(result)[:300])
    again = server.tool_result(server.send_tool("sandbox_upload_file", session_id=sid,
                                                filename="second.bin", content_base64=content))
    check("/mnt/data full: once freed, the upload succeeds", not again["isError"],
          json.dumps(again)[:300])
    server.close()


def scenario_store_full():
    if os.geteuid() != 0:
        skip("mounting a loop filesystem needs root")
    archives = sorted(glob.glob(os.path.join(store_dir(), "archives", "python-small-*.tar")))
    if not archives:
        skip("no python-small archive in the store (mcp-sandbox image build --variant small)")
    work = tempfile.mkdtemp(prefix="faults-store-")
    image, mount = os.path.join(work, "fs.img"), os.path.join(work, "state")
    os.makedirs(mount)
    try:
        subprocess.run(["truncate", "-s", "48M", image], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
        mounted = subprocess.run(["mount", "-o", "loop", image, mount], capture_output=True,
                                 text=True)
        if mounted.returncode != 0:
            skip("cannot mount a loop filesystem here: " + mounted.stderr.strip())
        try:
            started = time.monotonic()
            out = subprocess.run([BIN, "image", "import", archives[-1], "--name", "full",
                                  "--state-dir", mount], capture_output=True, text=True,
                                 timeout=600)
            check("store full: the import fails", out.returncode != 0,
                  "exit %d after %.0f s" % (out.returncode, time.monotonic() - started))
            check("store full: the error says the disk is full",
                  "No space left" in out.stderr or "space" in out.stderr, out.stderr[-400:])
            listed = subprocess.run([BIN, "image", "ls", "--json", "--state-dir", mount],
                                    capture_output=True, text=True)
            images = json.loads(listed.stdout or "{}").get("images", None)
            check("store full: no image is listed", images == [], listed.stdout[:300])
            entries = []
            for top, dirs, files in os.walk(mount):
                if top == mount:
                    dirs[:] = [d for d in dirs if d != "lost+found"]
                # Lock files (empty, flock'ed) stay by design, as the store's own do.
            entries += [os.path.join(top, name) for name in files
                        if not (name.endswith(".lock") or name.startswith(".lock-"))
                        and name != "names.json"]
            used = int(subprocess.run(["df", "--output=used", "-B1", mount], capture_output=True,
                                      text=True).stdout.split()[-1])
            check("store full: no half image or temp file is left", not entries,
                  entries[:10])
            check("store full: the space is given back", used < (8 << 20),
                  "%d bytes still used" % used)
        finally:
            subprocess.run(["umount", mount])
    finally:
        subprocess.run(["rm", "-rf", work])


def scenario_oom_20():
    state = own_state_dir()
    server = serve(state, "--max-sessions", "25")
    bystander = server.tool("sandbox_create_session")["session_id"]
    server.tool("sandbox_run_python", session_id=bystander, code="keep = list(range(10))")
    ids = [server.tool("sandbox_create_session", memory_limit="128m")["session_id"]
           for _ in range(20)]
    calls = {server.send_tool("sandbox_run_python", session_id=sid,
                              code="blocks = []\nwhile True: blocks.append(bytearray(16 << 20))",
                              timeout_s=60): sid for sid in ids}
    results = {sid: server.tool_result(call) for call, sid in calls.items()}
    ooms = [sid for sid, r in results.items() if r.get("error") == "oom" or r.get("oom")]
    check("20 sessions past their memory limit at once: each reports oom", len(ooms) == 20,
          {sid: json.dumps(r)[:200] for sid, r in results.items() if sid not in ooms})
    after = [server.tool("sandbox_run_python", session_id=sid, code="print('after')")
             for sid in ids]
    check("20 OOMs: every one of those sessions runs again",
          all(r.get("stdout") == "after\n" for r in after), [json.dumps(r)[:200] for r in after
                                                            if r.get("stdout") != "after\n"][:3])
    result = server.tool("sandbox_run_python", session_id=bystander, code="print(len(keep))")
    check("20 OOMs: another session keeps its state", result.get("stdout") == "10\n",
          json.dumps(result)[:300])
    check("20 OOMs: the server is alive", server.proc.poll() is None)
    session_ids, pids, cgroups = snapshot(server, state)
    check("20 OOMs: the server exits cleanly", server.close() == 0)
    left = leftovers(state, session_ids, pids, cgroups)
    check("20 OOMs: nothing left", not left, left)


class PrivateDockerd:
    """A Docker daemon of this test's own (socket, data and exec roots in a temp dir), so
    restarting it disturbs no other user of the machine's daemon."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="faults-dockerd-", dir="/tmp")
        self.env = dict(os.environ, DOCKER_HOST="unix://%s/docker.sock" % self.dir,
                        SANDBOX_DOCKERD_STATE=self.dir + "/state",
                        SANDBOX_DOCKERD_DATA=self.dir + "/data")

    def run(self, verb):
        return subprocess.run([os.path.join(ROOT, "tools", "lib", "dockerd.sh"), verb],
                              env=self.env, capture_output=True, text=True)

    def containers(self):
        out = subprocess.run(["docker", "ps", "-aq", "--filter", "label=mcp-sandbox.owner"],
                             env=self.env, capture_output=True, text=True)
        return out.stdout.split()

    def remove(self):
        self.run("stop")
        subprocess.run(["rm", "-rf", self.dir])


@contextlib.contextmanager
def private_dockerd():
    if os.geteuid() != 0:
        skip("starting a Docker daemon needs root")
    if subprocess.run(["sh", "-c", "command -v dockerd"], capture_output=True).returncode != 0:
        skip("dockerd is not installed (apt-get install docker.io)")
    daemon = PrivateDockerd()
    try:
        started = daemon.run("start")
        if not check("a private dockerd starts", started.returncode == 0, started.stderr[-400:]):
            sys.exit(1)
        yield daemon
    finally:
        daemon.remove()


def scenario_docker_restart():
    with private_dockerd() as daemon:
        state = own_state_dir()
        env = dict(daemon.env, SANDBOX_BACKEND="docker", SANDBOX_IMAGE="python-small")
        server = serve(state, env=env)
        sid = server.tool("sandbox_create_session")["session_id"]
        result = server.tool("sandbox_run_python", session_id=sid, code="x = 1; print(x)")
        check("docker: a session runs", result.get("stdout") == "1\n", json.dumps(result)[:300])

        daemon.run("stop")
        started = time.monotonic()
        result = server.tool_result(server.send_tool("sandbox_run_python", session_id=sid,
                                                     code="print(x)"))
        check("daemon down: a run answers sandbox_unavailable (or session_not_found) at once",
              result["isError"] and result.get("error") in ("sandbox_unavailable",
                                                            "session_not_found")
              and time.monotonic() - started < 40,
              "%.1f s: %s" % (time.monotonic() - started, json.dumps(result)[:300]))
        created = server.tool_result(server.send_tool("sandbox_create_session"))
        check("daemon down: a new session answers sandbox_unavailable",
              created["isError"] and created.get("error") == "sandbox_unavailable",
              json.dumps(created)[:300])

        started = daemon.run("start")
        check("the private dockerd starts again", started.returncode == 0, started.stderr[-300:])
        new = server.tool_result(server.send_tool("sandbox_create_session"))
        check("daemon back: a new session is created", not new["isError"],
              json.dumps(new)[:300])
        if not new["isError"]:
            result = server.tool("sandbox_run_python", session_id=new["session_id"],
                                 code="print('back')")
            check("daemon back: it runs", result.get("stdout") == "back\n",
                  json.dumps(result)[:300])
        check("the server exits cleanly", server.close() == 0)
        check("nothing left: no container", wait_until(lambda: not daemon.containers(), 20),
              daemon.containers())
        check("nothing left: no record", not records(state), list(records(state)))


def scenario_server_kill_docker():
    with private_dockerd() as daemon:
        scenario_server_kill(dict(daemon.env, SANDBOX_BACKEND="docker",
                                  SANDBOX_IMAGE="python-small"), daemon.containers)


SCENARIOS = {
    "server-kill": scenario_server_kill,
    "server-kill-docker": scenario_server_kill_docker,
    "agent-stopped": scenario_agent_stopped,
    "data-full": scenario_data_full,
    "store-full": scenario_store_full,
    "oom-20": scenario_oom_20,
    "docker-restart": scenario_docker_restart,
}


def main():
    if SCENARIO not in SCENARIOS:
        print(__doc__)
        return 2
    doctor = subprocess.run([BIN, "doctor", "--json"], capture_output=True, text=True)
    if '"usable": true' not in doctor.stdout and SCENARIO != "docker-restart":
        skip("no sandbox backend on this host (mcp-sandbox doctor)")
    before.update(sleepers())
    SCENARIOS[SCENARIO]()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
