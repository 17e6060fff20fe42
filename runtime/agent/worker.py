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


def _read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(CONTROL_IN, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame(json):
    head = _read_exact(4)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_FRAME:
        raise ValueError("control frame too large")
    body = _read_exact(size)
    if body is None:
        return None
    return json.loads(body)


def _write_frame(json, message):
    body = json.dumps(message).encode()
    data = len(body).to_bytes(4, "big") + body
    view = memoryview(data)
    while view:
        written = os.write(CONTROL_OUT, view)
        view = view[written:]


def _on_sigint(signum, frame):
    # Outside user code (reading the next request, reporting a result) an interrupt must not
    # break the worker's own bookkeeping; init only sends SIGINT while a cell runs anyway.
    if _State.in_cell:
        raise KeyboardInterrupt


def _print_exception(exc):
    import traceback

    report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    # Drop this file's frames (the exec/eval call, the SIGINT handler) so the traceback shows
    # the cell's code only.
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if frame.filename != __file__]
    )
    sys.stderr.write("".join(report.format()))


def _run_cell(code, namespace):
    """Runs one cell; returns (exit_code, interrupted)."""
    import linecache

    _State.cell_count += 1
    filename = "<cell-%d>" % _State.cell_count
    # Lets tracebacks show the cell's source lines (mtime None: never invalidated).
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
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
    for number in numbers:
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


def main():
    import builtins
    import json
    import signal

    os.set_inheritable(CONTROL_IN, False)
    os.set_inheritable(CONTROL_OUT, False)
    data_dir = os.environ.get("SANDBOX_AGENT_DATA_DIR", "/mnt/data")
    # Like the REPL: the working directory (the data dir) comes first on sys.path, not the
    # directory of this script.
    sys.path[0] = ""
    sys.argv = [""]
    signal.signal(signal.SIGINT, _on_sigint)

    # Cells run in a module of their own named __main__, so pickling and multiprocessing find
    # what they define; this file keeps its own globals.
    main_module = type(sys)("__main__")
    main_module.__dict__["__builtins__"] = builtins
    worker_module = sys.modules["__main__"]
    sys.modules["__main__"] = main_module
    namespace = main_module.__dict__

    _write_frame(json, {"type": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        try:
            message = _read_frame(json)
        except KeyboardInterrupt:
            continue
        if message is None:
            break
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
            json,
            {
                "type": "done",
                "id": message.get("id"),
                "exit_code": exit_code,
                "interrupted": interrupted,
                "figures": figures,
            },
        )
    del worker_module


if __name__ == "__main__":
    main()
