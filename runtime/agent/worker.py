"""The Python worker of the sandbox agent (runtime/agent/PROTOCOL.md, "init <-> worker").

Started by sandbox-init as `python3 -u /.sandbox/worker.py`. Runs code cells in one persistent
namespace, like a notebook kernel. fd 1 and fd 2 are pipes that init reads and caps; the control
channel is fd 3 (frames from init) and fd 4 (frames to init): a 4-byte big-endian length and a
JSON object. Nothing heavy is imported here: startup time and idle memory matter.
"""

import _ast
import os
import sys

CONTROL_IN = 3
CONTROL_OUT = 4
MAX_FRAME = 96 << 20


class _State:
    in_cell = False  # SIGINT raises KeyboardInterrupt only while user code runs
    cell_count = 0
    figure_count = 0
    unregistered_cells = {}  # filename -> source, not yet in linecache


def _register_cells():
    """Gives linecache the cells' sources (for tracebacks, inspect.getsource, pdb). linecache is
    not imported up front (it pulls in `re`: startup time and idle memory in every session):
    _LinecacheWatch calls this the moment anything imports it."""
    linecache = sys.modules.get("linecache")
    if linecache is None or not _State.unregistered_cells:
        return
    for filename, code in _State.unregistered_cells.items():
        # mtime None: linecache.checkcache never drops the entry.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    _State.unregistered_cells.clear()


class _NotifyingLoader:
    """linecache's real loader, plus registering the cells once the module has run."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        self._real.exec_module(module)
        if _LinecacheWatch in sys.meta_path:
            sys.meta_path.remove(_LinecacheWatch)
        _register_cells()


class _LinecacheWatch:
    """A meta path finder that only wraps the loader of linecache; every other import passes."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "linecache":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is _LinecacheWatch or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                spec.loader = _NotifyingLoader(spec.loader)
                return spec
        return None


def _read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(CONTROL_IN, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame(codec):
    head = _read_exact(4)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_FRAME:
        raise ValueError("control frame too large")
    body = _read_exact(size)
    if body is None:
        return None
    return codec.loads(body)


def _write_frame(codec, message):
    body = codec.dumps(message).encode()
    data = len(body).to_bytes(4, "big") + body
    view = memoryview(data)
    while view:
        written = os.write(CONTROL_OUT, view)
        view = view[written:]


class _Codec:
    """JSON for the control channel on the C accelerator alone: `import json` pulls in `re`,
    which costs startup time and idle memory in every session."""

    def __init__(self):
        try:
            import _json
        except ImportError:  # a Python built without the accelerator
            import json

            self.loads, self.dumps = json.loads, json.dumps
            return

        class _ScannerContext:  # the attributes _json.make_scanner reads
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = float  # init never sends NaN/Infinity

        scanner = _json.make_scanner(_ScannerContext)
        quote = _json.encode_basestring_ascii

        def loads(data):
            value, _ = scanner(data.decode(), 0)
            return value

        def dumps(value):
            if value is None:
                return "null"
            if value is True:
                return "true"
            if value is False:
                return "false"
            if isinstance(value, int):
                return int.__repr__(value)
            if isinstance(value, str):
                return quote(value)
            if isinstance(value, (list, tuple)):
                return "[" + ",".join(map(dumps, value)) + "]"
            if isinstance(value, dict):
                return "{" + ",".join(quote(k) + ":" + dumps(v) for k, v in value.items()) + "}"
            raise TypeError("cannot encode %r" % type(value))

        self.loads, self.dumps = loads, dumps


def _on_sigint(signum, frame):
    # Outside user code (reading the next request, reporting a result) an interrupt must not
    # break the worker's own bookkeeping; init only sends SIGINT while a cell runs anyway.
    if _State.in_cell:
        raise KeyboardInterrupt


def _print_exception(exc):
    import traceback

    _register_cells()

    report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    # Drop this file's frames (the exec/eval call, the SIGINT handler) so the traceback shows
    # the cell's code only. By the name its code was compiled under, not __file__: run from
    # byte code (worker.pyc, tools/cli/run_agent_cache.h), __file__ names the .pyc.
    this_file = _print_exception.__code__.co_filename
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if frame.filename != this_file]
    )
    sys.stderr.write("".join(report.format()))


def _run_cell(code, namespace):
    """Runs one cell; returns (exit_code, interrupted)."""
    _State.cell_count += 1
    filename = "<cell-%d>" % _State.cell_count
    _State.unregistered_cells[filename] = code
    _register_cells()
    try:
        tree = compile(code, filename, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr):
            last = _ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec", dont_inherit=True)
        tail = compile(last, filename, "eval", dont_inherit=True) if last else None
        _State.in_cell = True
        try:
            exec(body, namespace)
            if tail is not None:
                value = eval(tail, namespace)
                # Like the REPL: repr of the last expression, unless None; also sets `_`.
                sys.displayhook(value)
        finally:
            _State.in_cell = False
        return 0, False
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return 1, True
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0, False
        if isinstance(code, int):
            return code, False
        print(code, file=sys.stderr)
        return 1, False
    except BaseException as exc:
        _print_exception(exc)
        return 1, False


# Figures one run returns; kMaxRunFigures in runtime/agent/run_limits.h.
MAX_FIGURES = 32


def _unique_figure_path(data_dir):
    while True:
        _State.figure_count += 1
        path = os.path.join(data_dir, "figure_%d.png" % _State.figure_count)
        if not os.path.lexists(path):
            return path


def _save_figures(data_dir):
    """Saves every open matplotlib figure as PNG under the data dir, closes them, returns paths."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    paths = []
    try:
        numbers = list(pyplot.get_fignums())
    except Exception:
        return []
    for index, number in enumerate(numbers):
        if len(paths) >= MAX_FIGURES:
            # init reads at most this many (runtime/agent/run_limits.h); the rest are closed
            # unsaved rather than written for nothing.
            print(
                "%d more open figure(s) closed unsaved: a run returns at most %d"
                % (len(numbers) - index, MAX_FIGURES),
                file=sys.stderr,
            )
            for rest in numbers[index:]:
                try:
                    pyplot.close(rest)
                except Exception:
                    pass
            break
        try:
            figure = pyplot.figure(number)
            path = _unique_figure_path(data_dir)
            figure.savefig(path, format="png", bbox_inches="tight")
            paths.append(path)
        except Exception as exc:
            print("could not save figure %s: %r" % (number, exc), file=sys.stderr)
        finally:
            try:
                pyplot.close(number)
            except Exception:
                pass
    return paths


def _flush_output():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    # C extensions write through libc's stdio, which is fully buffered on a pipe. ctypes is only
    # used when something already loaded it (numpy does), to keep the idle worker small.
    ctypes = sys.modules.get("ctypes")
    if ctypes is not None:
        try:
            ctypes.CDLL(None).fflush(None)
        except Exception:
            pass


def _reap(pids):
    """Waits for the children an interrupted cell left, which init has just SIGKILLed: their
    zombies would otherwise hold pids of the session's limit for the rest of the session. A pid
    that is not our child (a grandchild, already reaped by init) is skipped; one that takes
    longer than a second to die is left."""
    import time

    deadline = time.monotonic() + 1.0
    for pid in pids:
        if not isinstance(pid, int) or pid <= 0:
            continue
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            except KeyboardInterrupt:
                return
            if done == pid or time.monotonic() > deadline:
                break
            time.sleep(0.001)


def _session_state(action, argument):
    """Saves or restores the session (session_state.py next to this file, loaded only now so
    that an idle worker stays small). Called by a cell the server sends."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "session_state.py")
    with open(path) as source:
        code = compile(source.read(), path, "exec", dont_inherit=True)
    module = type(sys)("_sandbox_session_state")
    module.__dict__["__file__"] = path
    exec(code, module.__dict__)
    getattr(module, action)(argument)


def main():
    import _signal  # not `signal`: its enums would pull in `enum` for every session
    import builtins

    codec = _Codec()

    os.set_inheritable(CONTROL_IN, False)
    os.set_inheritable(CONTROL_OUT, False)
    data_dir = os.environ.get("SANDBOX_AGENT_DATA_DIR", "/mnt/data")
    # Like the REPL: the working directory (the data dir) comes first on sys.path, not the
    # directory of this script.
    sys.path[0] = ""
    sys.argv = [""]
    if "linecache" not in sys.modules:
        sys.meta_path.insert(0, _LinecacheWatch)
    _signal.signal(_signal.SIGINT, _on_sigint)

    # Cells run in a module of their own named __main__, so pickling and multiprocessing find
    # what they define; this file keeps its own globals.
    main_module = type(sys)("__main__")
    main_module.__dict__["__builtins__"] = builtins
    worker_module = sys.modules["__main__"]
    sys.modules["__main__"] = main_module
    # Where the server's save/restore cells find _session_state (a name no import shadows).
    sys.modules["_sandbox_worker"] = worker_module
    namespace = main_module.__dict__

    _write_frame(codec, {"type": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        try:
            message = _read_frame(codec)
        except KeyboardInterrupt:
            continue
        if message is None:
            break
        if message.get("type") == "reap":
            _reap(message.get("pids", []))
            continue
        if message.get("type") != "run":
            continue
        exit_code, interrupted = 1, True
        try:
            exit_code, interrupted = _run_cell(message.get("code", ""), namespace)
        except KeyboardInterrupt:
            pass  # arrived while the exception of the cell was being printed
        figures = _save_figures(data_dir)
        _flush_output()
        # Only after the flush: init drains the pipes once it has this frame.
        _write_frame(
            codec,
            {
                "type": "done",
                "id": message.get("id"),
                "exit_code": exit_code,
                "interrupted": interrupted,
                "figures": figures,
            },
        )
    del worker_module


# --- the zygote (runtime/agent/PROTOCOL.md, "The preload zygote") ------------------------------


def _preload(names):
    """Imports `names` into sys.modules (nothing is bound in any user namespace). Returns the
    names imported and one line per failure."""
    had_mpl_dir = os.path.lexists(os.environ.get("MPLCONFIGDIR", "/nonexistent"))
    imported, failed = [], []
    for name in names:
        try:
            __import__(name)
            imported.append(name)
        except BaseException as exc:  # a broken module is left out, never fatal
            failed.append("%s: %s: %s" % (name, type(exc).__name__, str(exc)[:200]))
    _warm_up(imported)
    # matplotlib writes its font cache to MPLCONFIGDIR (/tmp/.matplotlib) on import; a new
    # session must find /tmp as empty as a cold one would. The cache is in memory already.
    mpl_dir = os.environ.get("MPLCONFIGDIR")
    if mpl_dir and not had_mpl_dir and os.path.isdir(mpl_dir):
        import shutil

        shutil.rmtree(mpl_dir, ignore_errors=True)
    return imported, failed


def _release_free_heap():
    """Gives the heap pages the imports and the warm-up freed back to the kernel (glibc keeps
    them otherwise), so they are neither counted against the sandbox nor copied by workers."""
    ctypes = sys.modules.get("ctypes")
    if ctypes is None:
        return
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except Exception:
        pass


def _warm_up(imported):
    """Pays the first-use costs of the preloaded modules once, here, instead of in each new
    session's first cell: the lazy imports and caches behind a DataFrame's describe and repr, an
    array's repr, a figure drawn to memory. Binds nothing a session can see, writes no file, and
    leaves no figure open; a failure only means a colder first cell."""
    try:
        if "numpy" in imported:
            import numpy

            repr(numpy.arange(12.0).reshape(3, 4).mean(axis=0))
        if "pandas" in imported:
            import pandas

            frame = pandas.DataFrame({"a": range(100), "b": [0.5] * 100})
            str(frame.describe())
            repr(frame.head())
            str(frame.groupby("a").sum().head())
        if "matplotlib.pyplot" in imported:
            import io

            pyplot = sys.modules["matplotlib.pyplot"]
            figure = pyplot.figure()
            try:
                pyplot.plot([0, 1, 2], [0, 1, 4])
                pyplot.title("t")
                figure.savefig(io.BytesIO(), format="png", bbox_inches="tight")
            finally:
                pyplot.close("all")
    except BaseException:
        pass


def _become_worker(fds, intermediate, data_dir, warm_up):
    """Runs in the forked worker: takes the 5 fds init sent as 0..4, forgets the zygote's."""
    os.setpgid(0, 0)
    for index, fd in enumerate(fds):
        os.dup2(fd, 64 + index)
    for index in range(5):
        os.dup2(64 + index, index)
    os.closerange(5, 1 << 16)
    # init reaps us once the intermediate process has exited; from then on, init's death must
    # take this worker with it (as PDEATHSIG does for workers init starts itself). Set before
    # the reparenting, the intermediate's exit would deliver it.
    import time

    deadline = time.monotonic() + 5
    while os.getppid() == intermediate and time.monotonic() < deadline:
        time.sleep(0.0002)
    ctypes = sys.modules.get("ctypes")
    if ctypes is not None and os.getppid() != intermediate:
        try:
            ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        except Exception:
            pass
    os.chdir(data_dir)
    # Every worker draws its own random numbers: `random` reseeds itself after fork, numpy's
    # global generator does not.
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            numpy_random.seed()
        except Exception:
            pass
    if warm_up:
        # Only what a first DataFrame cell touches: the full warm-up would copy three times
        # the pages for figures few first cells draw.
        _warm_up([name for name in ("numpy", "pandas") if name in sys.modules])
    main()
    os._exit(0)


def zygote_main(preload):
    """Imports the preload, says `ready` on the socket at fd 3, then forks a worker for each
    request: a packet carrying 5 fds (stdin, stdout, stderr, control in, control out). The
    worker is a grandchild (the child in between exits), so init becomes its parent and reaps
    it; the worker's pid is the answer."""
    import _socket

    codec = _Codec()
    os.set_inheritable(CONTROL_IN, False)
    data_dir = os.environ.get("SANDBOX_AGENT_DATA_DIR", "/mnt/data")
    imported, failed = _preload([name for name in preload.split(",") if name])
    # Everything imported so far is shared with every worker forked from here. The collector
    # would walk (and so write to, copying the page) each of those objects in every worker:
    # frozen, it leaves them alone, and a worker's first collection costs only its own objects.
    import gc

    gc.collect()
    gc.freeze()
    _release_free_heap()
    sock = _socket.socket(fileno=CONTROL_IN)
    sock.send(
        codec.dumps({"type": "ready", "pid": os.getpid(), "imported": imported, "failed": failed})
        .encode()
    )
    fd_bytes = _socket.CMSG_SPACE(5 * 4)
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(64, fd_bytes)
        except InterruptedError:
            continue
        if not data:
            break
        fds = []
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                count = len(payload) // 4
                fds += [int.from_bytes(payload[4 * i : 4 * i + 4], sys.byteorder) for i in range(count)]
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            sock.send(codec.dumps({"type": "error", "message": "expected 5 fds"}).encode())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        intermediate = os.fork()
        if intermediate == 0:
            try:
                me = os.getpid()  # not getppid() in the worker: this process may be gone by then
                worker = os.fork()
                if worker == 0:
                    sock.close()
                    _become_worker(fds, me, data_dir, data[:1] == b"W")
                try:
                    os.setpgid(worker, worker)
                except OSError:
                    pass  # it did it itself, or is gone already: init hears of either
                sock.send(codec.dumps({"type": "forked", "pid": worker}).encode())
                os._exit(0)
            except BaseException:
                os._exit(1)
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(intermediate, 0)
        if status != 0:
            sock.send(codec.dumps({"type": "error", "message": "fork failed"}).encode())


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--zygote":
        zygote_main(sys.argv[2])
    else:
        main()
