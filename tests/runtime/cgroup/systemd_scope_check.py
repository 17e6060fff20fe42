#!/usr/bin/env python3
"""Real limits for an ordinary user through the user's systemd manager (issue #15).

Runs as an unprivileged user whose systemd manager and session bus are up (in the systemd VM of
run_systemd_scope_in_vm.sh), against the real mcp-sandbox binary over stdio:
doctor reports delegated cgroup v2 limits; a session past its memory limit returns oom and
stays usable; a fork bomb stops at the pids limit; CPU is throttled to cpu_limit; per-session
limits are written to the session's cgroup; closing a session removes its cgroup; kill -9 of
the server then a restart leaves no scope or process behind; a crashed server's scope still
holding a sandbox is stopped by `sessions gc` and by the next start; `run` gets the same limits;
and without the user's bus the fallback to rlimits is reported with the command that helps.

usage: systemd_scope_check.py MCP_SANDBOX IMAGE
Prints "ok NAME" or "FAIL NAME: why" per check; exits 1 when any failed.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "support"))
import mcp_stdio  # noqa: E402
import polling  # noqa: E402

BIN, IMAGE = sys.argv[1], sys.argv[2]
CGROUP_ROOT = "/sys/fs/cgroup"
failures = []


def check(name, condition, detail=""):
    if condition:
        print("ok   " + name, flush=True)
    else:
        print("FAIL %s: %s" % (name, detail), flush=True)
        failures.append(name)
    return condition


def user_scopes():
    """The mcp-sandbox scopes the user's manager has loaded, by name."""
    out = subprocess.run(["systemctl", "--user", "list-units", "--all", "--plain", "--no-legend",
                          "mcp-sandbox-*.scope"], capture_output=True, text=True).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.strip())


def wait_until(predicate, timeout=60.0):
    return polling.wait_until(predicate, timeout)


def cgroup_of(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            if line.startswith("0::"):
                return CGROUP_ROOT + line[3:].strip()
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


class Server(mcp_stdio.Server):
    """`mcp-sandbox serve` over stdio, spoken to one request at a time. An answer that takes
    longer than ANSWER_TIMEOUT_S (the slowest seen under emulation is a few seconds) reports
    what the server and its sandboxes were doing, and fails that step instead of waiting for
    the VM's own time-out."""

    ANSWER_TIMEOUT_S = 240

    def __init__(self, env=None):
        super().__init__(BIN, env=env, client_name="systemd-scope-check",
                         answer_timeout=self.ANSWER_TIMEOUT_S)

    def on_hung(self, request_id):
        print("HUNG request %d: no answer in %d s; the server's threads and its scope's processes:"
              % (request_id, self.ANSWER_TIMEOUT_S), flush=True)
        print(hang_report(self.proc.pid), flush=True)


def hang_report(pid):
    """Each thread of `pid` with its state and kernel wait channel, then every process in the
    cgroup tree of its scope (the server's parent group) the same way."""
    lines = []

    def describe(task_dir, label):
        def read(name):
            try:
                with open(os.path.join(task_dir, name)) as f:
                    return f.read().strip()
            except OSError as e:
                return "?(%s)" % e.strerror
        state = next((l for l in read("status").splitlines() if l.startswith("State:")), "State: ?")
        lines.append("  %s %s %s wchan=%s" % (label, read("comm"), state.split(":", 1)[1].strip(),
                                              read("wchan")))

    for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
        describe("/proc/%d/task/%s" % (pid, tid), "server thread " + tid)
    scope = os.path.dirname(cgroup_of(pid) or "/")
    if not scope.endswith(".scope"):
        return "\n".join(lines + ["  (the server is in no scope of its own: %s)" % scope])
    for root, _, files in os.walk(scope):
        if "cgroup.procs" not in files:
            continue
        with open(os.path.join(root, "cgroup.procs")) as f:
            for other in f.read().split():
                if int(other) != pid:
                    describe("/proc/" + other, "%s pid %s" % (os.path.relpath(root, scope), other))
    return "\n".join(lines)


def limits_by_name(limits):
    """{name: entry} of a limits list, or of an {"limits": [...]} object."""
    if isinstance(limits, dict):
        limits = limits.get("limits", [])
    return {entry["name"]: entry for entry in limits or []}


def check_doctor():
    out = subprocess.run([BIN, "doctor", "--json"], capture_output=True, text=True)
    report = json.loads(out.stdout)
    cgroups = report.get("cgroup", {})
    mode, reason = cgroups.get("mode"), cgroups.get("reason", "")
    check("doctor: cgroup v2 through a scope from the user's systemd manager",
          mode == "cgroup2" and "mcp-sandbox-" in reason and ".scope" in reason,
          "mode %s, reason %s" % (mode, reason))
    limits = limits_by_name(report.get("limits"))
    check("doctor: memory, pids and cpu are cgroup2 limits",
          all(limits.get(n, {}).get("mechanism") == "cgroup2" for n in ("memory", "pids", "cpu")),
          json.dumps(report.get("limits")))
    check("doctor: its scope is gone once it exits", wait_until(lambda: not user_scopes()),
          "left: %s" % user_scopes())


def check_sessions():
    server = Server()
    scope_dir = os.path.dirname(cgroup_of(server.proc.pid))  # the server sits in <scope>/server
    scope = os.path.basename(scope_dir)
    check("serve: the server sits in <owner>-<pid>.scope/server",
          scope == "mcp-sandbox-%d.scope" % server.proc.pid, cgroup_of(server.proc.pid))

    created = server.tool("sandbox_create_session", image=IMAGE, memory_limit="96m",
                          cpu_limit=0.5, pids_limit=48)
    session = created["session_id"]
    enforced = limits_by_name(created.get("enforced", {}))
    check("create: the limits in force are cgroup2",
          enforced.get("memory", {}).get("mechanism") == "cgroup2", json.dumps(created))
    group = os.path.join(scope_dir, "mcp-sandbox", session)  # the group is named by the id

    def read(name):
        with open(os.path.join(group, name)) as f:
            return f.read().strip()

    check("create: per-session limits are written to the session's cgroup",
          os.path.isdir(group) and read("memory.max") == str(96 << 20) and
          read("pids.max") == "48" and read("cpu.max") == "50000 100000",
          os.path.isdir(group) and (read("memory.max"), read("pids.max"), read("cpu.max")))

    oom = server.tool("sandbox_run_python", session_id=session,
                      code="b = bytearray(400 << 20)\nb[::4096] = b'x' * len(b[::4096])")
    check("memory: past the limit the run returns oom", oom.get("error") == "oom", json.dumps(oom))
    after = server.tool("sandbox_run_python", session_id=session, code="print(6 * 7)")
    check("memory: the session stays usable after the oom",
          after.get("stdout", "").strip() == "42", json.dumps(after))

    bomb = server.tool("sandbox_run_python", session_id=session, code=(
        "import os, time\n"
        "children, refused = [], None\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as e:\n"
        "        refused = e.errno; break\n"
        "    if pid == 0:\n"
        "        time.sleep(30); os._exit(0)\n"
        "    children.append(pid)\n"
        "print(len(children), refused)\n"
        "for pid in children: os.kill(pid, 9); os.waitpid(pid, 0)\n"))
    forked = bomb.get("stdout", "").split()
    check("pids: a fork bomb stops at the pids limit",
          len(forked) == 2 and forked[1] == "11" and 0 < int(forked[0]) < 48, json.dumps(bomb))

    cpu = server.tool("sandbox_run_python", session_id=session, code=(
        "import time\n"
        "wall0, cpu0 = time.monotonic(), time.process_time()\n"
        "while time.monotonic() - wall0 < 3: pass\n"
        "print(round((time.process_time() - cpu0) / (time.monotonic() - wall0), 3))\n"))
    share = float(cpu.get("stdout", "0").strip() or 0)
    check("cpu: a busy loop is throttled to cpu_limit 0.5", 0.2 < share < 0.65,
          "cpu share %s (%s)" % (share, json.dumps(cpu)))

    status = server.tool("sandbox_session_status", session_id=session)
    enforced = status.get("enforced", {})
    check("status: reports cgroup2 and the scope it comes from",
          enforced.get("cgroup_mode") == "cgroup2" and scope in enforced.get("reason", ""),
          json.dumps(enforced))

    server.tool("sandbox_close_session", session_id=session)
    check("close: the session's cgroup is removed", not os.path.exists(group), group)

    # A second session, then kill -9: the sandbox dies with the server, the scope goes.
    second = server.tool("sandbox_create_session", image=IMAGE)["session_id"]
    with open(os.path.join(scope_dir, "mcp-sandbox", second, "cgroup.procs")) as procs:
        init_pids = [int(pid) for pid in procs]
    check("kill -9: the second session has processes", bool(init_pids), second)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    restarted = Server()
    check("kill -9 then restart: no process of the killed server's sessions is left",
          wait_until(lambda: not any(alive(pid) for pid in init_pids)),
          [pid for pid in init_pids if alive(pid)])
    check("kill -9 then restart: only the new server's scope is loaded",
          wait_until(lambda: user_scopes() == ["mcp-sandbox-%d.scope" % restarted.proc.pid]),
          user_scopes())
    restarted.close()
    check("exit: the server's scope is gone when it exits", wait_until(lambda: not user_scopes()),
          user_scopes())


def leave_stale_scope(pid_name):
    """A crashed server's scope as it would be left if a sandbox outlived its server: a real
    delegated scope whose only process sits in <scope>/mcp-sandbox/sess_... (the server's own
    cgroup and its leaf "server" are empty). Returns the stray process's pid."""
    unit = "mcp-sandbox-%d.scope" % pid_name
    script = ("cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup); "
              "mkdir -p $cg/mcp-sandbox/sess_0123456789abcdef; "
              "echo $$ > $cg/mcp-sandbox/sess_0123456789abcdef/cgroup.procs; exec sleep 600")
    subprocess.Popen(["systemd-run", "--user", "--scope", "--quiet", "--unit", unit,
                      "-p", "Delegate=yes", "sh", "-c", script],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: unit in user_scopes())
    stray = []
    wait_until(lambda: bool(stray.extend(
        int(p) for p in subprocess.run(["pgrep", "-f", "^sleep 600$"], capture_output=True,
                                       text=True).stdout.split()) or stray))
    return unit, stray


def check_stale_sweep():
    unit, stray = leave_stale_scope(999901)
    check("sweep: a stale scope with a stray sandbox is set up", unit in user_scopes() and stray,
          "%s %s" % (user_scopes(), stray))
    out = subprocess.run([BIN, "sessions", "gc"], capture_output=True, text=True)
    check("sessions gc: stops the stale scope and kills what it held",
          wait_until(lambda: unit not in user_scopes() and not any(alive(p) for p in stray)),
          "%s, alive %s; %s" % (user_scopes(), [p for p in stray if alive(p)], out.stderr[-500:]))

    unit, stray = leave_stale_scope(999902)
    server = Server()
    check("next start: stops the stale scope and kills what it held",
          wait_until(lambda: unit not in user_scopes() and not any(alive(p) for p in stray)),
          "%s, alive %s" % (user_scopes(), [p for p in stray if alive(p)]))
    server.close()


def check_run():
    out = subprocess.run([BIN, "run", "--image", IMAGE, "--json", "-"], input="print(1)",
                         capture_output=True, text=True)
    try:
        limits = json.loads(out.stdout).get("limits") or {}
    except json.JSONDecodeError:
        limits = {}
    check("run --json: cgroup2 through a scope of its own",
          limits.get("cgroup_mode") == "cgroup2" and ".scope" in limits.get("reason", ""),
          out.stdout[-500:] + out.stderr[-500:])
    out = subprocess.run([BIN, "run", "--image", IMAGE, "--memory", "64m", "-"],
                         input="b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096])",
                         capture_output=True, text=True)
    check("run: past --memory the snippet is killed (137)", out.returncode == 137,
          "exit %d: %s" % (out.returncode, out.stderr[-500:]))


def check_no_bus():
    env = {k: v for k, v in os.environ.items()
           if k not in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")}
    out = subprocess.run([BIN, "doctor", "--json"], capture_output=True, text=True, env=env)
    cgroups = json.loads(out.stdout).get("cgroup", {})
    reason = cgroups.get("reason", "")
    check("no user bus: rlimits only, saying why and naming loginctl enable-linger",
          cgroups.get("mode") == "none" and "no user bus" in reason and
          "loginctl enable-linger" in reason, json.dumps(cgroups))
    out = subprocess.run([BIN, "run", "--image", IMAGE, "--json", "-"], input="print(1)",
                         capture_output=True, text=True, env=env)
    try:
        limits = json.loads(out.stdout).get("limits") or {}
    except json.JSONDecodeError:
        limits = {}
    check("no user bus: run --json says rlimits only and names loginctl enable-linger",
          limits.get("cgroup_mode") == "none" and
          "loginctl enable-linger" in limits.get("reason", ""),
          out.stdout[-500:] + out.stderr[-500:])
    server = Server(env=env)
    created = server.tool("sandbox_create_session", image=IMAGE)
    enforced = created.get("enforced", {})
    check("no user bus: sandbox_create_session says rlimits only and why",
          enforced.get("cgroup_mode") == "none" and "no user bus" in enforced.get("reason", ""),
          json.dumps(enforced))
    server.tool("sandbox_close_session", session_id=created["session_id"])
    server.close()
    env["XDG_RUNTIME_DIR"] = "/nonexistent"
    out = subprocess.run([BIN, "doctor", "--json"], capture_output=True, text=True, env=env)
    cgroups = json.loads(out.stdout).get("cgroup", {})
    check("unreachable bus: rlimits only, naming the bus address",
          cgroups.get("mode") == "none" and "/nonexistent/bus" in cgroups.get("reason", ""),
          json.dumps(cgroups))


def main():
    os.environ["SANDBOX_IMAGE"] = IMAGE
    os.environ.setdefault("SANDBOX_LOG_LEVEL", "warn")
    for step in (check_doctor, check_sessions, check_stale_sweep, check_run, check_no_bus):
        try:
            step()
        except Exception as e:  # one broken step must not hide the others' results
            check(step.__name__, False, "%s: %s" % (type(e).__name__, e))
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
