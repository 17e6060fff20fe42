"""One backend's row of the gVisor benchmark's server table (tools/bench.d/gvisor.sh): what a
session costs inside `mcp-sandbox serve` over stdio on the backend the environment selects.

Usage: backend_server_bench.py BINARY CALLS
Prints one line of space-separated figures in ms (idle memory in MiB):
  create+print(1) median, warm print(1) median, `import pandas` cold median,
  10,000 small files best, idle memory per session median, pandas-ready from the pool median.

- create + print(1): sandbox_create_session and the first print(1), the pool off, 5 sessions.
- `import pandas` cold: the first `import pandas` right after a create, the pool off, 3 sessions.
- 10,000 small files: one cell writing 10,000 files of 100 bytes under /tmp, best of 2.
- idle memory: 1 s after a session's print(1) (3 sessions that wrote no files), the PSS of every
  host process of the session (the server's child processes; for Docker the container's). gVisor's guest processes live inside the
  Sentry, so its PSS covers them; Docker's daemon and shim are not counted.
- pandas-ready from the pool: a pool of one (the shipped preload), create + the first pandas cell,
  each once the pool is full again, 3 sessions.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from warm_pool_bench import Server, pss_of_tree, ready_to_run  # noqa: E402

FILES = ("import os\n"
         "for i in range(10000):\n"
         "    with open('/tmp/f%d' % i, 'w') as f:\n"
         "        f.write('x' * 100)\n")


def timed(call):
    start = time.monotonic()
    call()
    return time.monotonic() - start


def session_pss(server, session):
    """The PSS of `session`'s host processes, in bytes: with the pool off and one session open,
    every process under the server but the server itself; for Docker, the container's."""
    if os.environ.get("SANDBOX_BACKEND") == "docker":
        listed = subprocess.run(["docker", "ps", "-q", "--filter",
                                 "label=mcp-sandbox.session=" + session],
                                capture_output=True, text=True).stdout.split()
        return sum(pss_of_tree(int(subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Pid}}", c],
            capture_output=True, text=True).stdout.strip() or 0)) for c in listed)
    return pss_of_tree(server.proc.pid) - pss_of_process(server.proc.pid)


def pss_of_process(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        return sum(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))


def main():
    binary, calls = sys.argv[1], int(sys.argv[2])
    os.environ["SANDBOX_HIBERNATE_AFTER_S"] = "0"
    os.environ["SANDBOX_POOL_SIZE"] = "0"
    server = Server(binary, client_name="backend-server-bench")
    create, warm, pandas, files, memory = [], [], [], [], []
    for i in range(5):
        session = []
        create.append(timed(lambda: (
            session.append(server.tool("sandbox_create_session")["session_id"]),
            server.tool("sandbox_run_python", session_id=session[0], code="print(1)"))))
        if i == 0:
            for _ in range(calls):
                warm.append(timed(lambda: server.tool(
                    "sandbox_run_python", session_id=session[0], code="print(1)")))
        if i < 2:
            files.append(timed(lambda: server.tool(
                "sandbox_run_python", session_id=session[0], code=FILES, timeout_s=120)))
        if i >= 2:  # sessions whose /tmp holds no files (gVisor's tmpfs is the Sentry's memory)
            time.sleep(1)
            memory.append(session_pss(server, session[0]))
        server.tool("sandbox_close_session", session_id=session[0])
    for _ in range(3):
        session = server.tool("sandbox_create_session")["session_id"]
        pandas.append(timed(lambda: server.tool(
            "sandbox_run_python", session_id=session, code="import pandas", timeout_s=120)))
        server.tool("sandbox_close_session", session_id=session)
    server.stop()

    os.environ["SANDBOX_POOL_SIZE"] = "1"
    server = Server(binary, client_name="backend-server-bench")
    pooled = ready_to_run(server, 1, 3)
    server.stop()

    ms = lambda samples: statistics.median(samples) * 1e3  # noqa: E731
    print("%.0f %.1f %.0f %.0f %.1f %.0f" % (ms(create), ms(warm), ms(pandas), min(files) * 1e3,
                                             statistics.median(memory) / 2**20, ms(pooled)))


main()
