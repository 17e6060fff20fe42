# Saves and restores a session inside its own sandbox (docs/sessions.md "Hibernate, resume, fork").
#
# Loaded by the persistent worker on the server's request (worker.py `_session_state`), never
# imported at start: an idle worker stays small. `save` writes one tar archive in the tmp dir:
#   data/...             the data dir's entries (regular files, directories, symlinks as links)
#   state/namespace.pkl  the globals that dill (or pickle) could serialize, as one pickle so
#                        that an instance and its class stay one class
#   state/state.json     modules bound under names (pd, np, plt), the working directory, the
#                        environment, and what could not be saved (name, type, why)
# The server only moves the archive's bytes and checks their size and digest; `restore` runs in
# the session's next sandbox, the only place that unpickles what a sandbox wrote. Member names
# and links are judged as the upload path judges them (runtime/agent/PROTOCOL.md, "File
# operations"): nothing outside the data dir is written, no symlink is followed on the way,
# and a link pointing out of the data dir is left out and reported.
import os
import sys

ARCHIVE_NAME = ".sandbox-session-state.tar"
STATE_JSON = "state/state.json"
NAMESPACE = "state/namespace.pkl"
# Names every module namespace has, which the new worker sets itself.
_OWN_NAMES = {"__builtins__", "__name__", "__doc__", "__package__", "__loader__", "__spec__"}
# Environment variables of the sandbox itself, not of the session's code.
_SANDBOX_ENV_PREFIXES = ("SANDBOX_",)


class _CountingSink:
    """A file that only counts what is written: sizes a pickle without holding it."""

    def __init__(self, limit):
        self.size = 0
        self.limit = limit

    def write(self, data):
        self.size += len(data)
        if self.size > self.limit:
            raise _TooLarge(self.size)
        return len(data)


class _TooLarge(Exception):
    pass


# Pickle protocol 5 (PEP 574): numpy arrays, and so pandas frames, hand their buffers to the
# pickler, which writes them as they are, without the copy (tobytes) protocol 4 makes. Sizing a
# 100 MB DataFrame then copies nothing, and writing it holds no second copy in memory.
PROTOCOL = 5


class _ExactWriter:
    """Writes to `out` exactly `size` bytes, as the tar header written before them says; a
    pickle that comes out longer (a thread of the session changed a global between the sizing
    and the writing) is stopped before it corrupts the archive, and a shorter one is caught by
    `close`."""

    def __init__(self, out, size):
        self.out = out
        self.left = size

    def write(self, data):
        if len(data) > self.left:
            raise _Changed()
        self.left -= len(data)
        return self.out.write(data)

    def close(self):
        if self.left != 0:
            raise _Changed()


class _Changed(Exception):
    pass


def _pickler():
    try:
        import dill

        return dill, "dill"
    except ImportError:
        import pickle

        return pickle, "pickle"


def _size_one(pickler, mechanism, value, sink):
    """Pickles one global into `sink` to size it. Without dill, a class or function defined in
    the session is pickled by name, which the new worker does not have: its load would fail,
    and with it the one pickle of every global. Such a value is refused here instead, so only
    it is reported as not saved."""
    if mechanism == "dill":
        pickler.dump(value, sink, protocol=PROTOCOL)
        return

    class SessionRefusingPickler(pickler.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__"):
                if getattr(obj, "__module__", None) == "__main__":
                    raise pickler.PicklingError(
                        "%s is defined in the session, and without dill (not in this image) "
                        "it can only be saved by name, which a new sandbox does not have" % obj.__qualname__
                    )
            return NotImplemented

    SessionRefusingPickler(sink, protocol=PROTOCOL).dump(value)


def _data_dir():
    return os.environ.get("SANDBOX_AGENT_DATA_DIR", "/mnt/data")


def _tmp_dir():
    return os.environ.get("SANDBOX_AGENT_TMP_DIR", "/tmp")


def _archive_path():
    return os.path.join(_tmp_dir(), ARCHIVE_NAME)


def _type_name(value):
    kind = type(value)
    module = getattr(kind, "__module__", "")
    name = getattr(kind, "__qualname__", kind.__name__)
    return name if module in ("builtins", "__main__", None, "") else "%s.%s" % (module, name)


def _add_json(archive, name, document):
    import io
    import json
    import tarfile

    data = json.dumps(document).encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    archive.addfile(info, io.BytesIO(data))


def save(max_bytes):
    """Writes the archive; prints one JSON line {archive, size, mechanism, saved, skipped}.
    Refuses (ValueError, so the cell fails with its message) a state above max_bytes."""
    import json
    import tarfile
    import types

    pickler, mechanism = _pickler()
    namespace = sys.modules["__main__"].__dict__
    modules, values, skipped = {}, {}, []
    budget = max_bytes
    for name, value in list(namespace.items()):
        if name in _OWN_NAMES:
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        threading = sys.modules.get("threading")
        if threading is not None and isinstance(value, threading.Thread) and value.is_alive():
            # dill would save the object, not the running code: say so instead.
            skipped.append({"name": name, "type": _type_name(value), "reason": "a running thread cannot be saved"})
            continue
        sink = _CountingSink(budget)
        try:
            _size_one(pickler, mechanism, value, sink)
        except _TooLarge:
            raise ValueError(
                "the session's state is larger than its cap of %d bytes (at %r, %s): "
                "delete large objects (del name) or save them as files" % (max_bytes, name, _type_name(value))
            ) from None
        except BaseException as exc:  # anything dill refuses: sockets, threads, generators
            if isinstance(exc, KeyboardInterrupt):
                raise
            skipped.append({"name": name, "type": _type_name(value), "reason": "%s: %s" % (type(exc).__name__, str(exc)[:200])})
            continue
        budget -= sink.size
        values[name] = value
    # The globals' pickle, sized as one (an instance and its class share the memo): its tar
    # member is written by hand, header then the pickle streamed straight into the archive, so
    # the state never exists twice in memory.
    sink = _CountingSink(max_bytes)
    try:
        pickler.dump(values, sink, protocol=PROTOCOL)
    except _TooLarge:
        raise ValueError("the session's state is larger than its cap of %d bytes: delete large objects "
                         "(del name) or save them as files" % max_bytes) from None
    data_dir = _data_dir()
    _check_room(sink.size, data_dir)
    path = _archive_path()
    if os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            info = tarfile.TarInfo(NAMESPACE)
            info.size = sink.size
            info.mode = 0o600
            out.write(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            exact = _ExactWriter(out, sink.size)
            try:
                pickler.dump(values, exact, protocol=PROTOCOL)
                exact.close()
            except _Changed:
                raise ValueError("the session's state changed while it was being saved (a thread of the "
                                 "session is still changing it); it was not saved") from None
            out.write(tarfile.NUL * (-sink.size % tarfile.BLOCKSIZE))
            # The rest through tarfile, which goes on from here (it starts at fileobj.tell()).
            with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
                if os.path.isdir(data_dir):
                    # Symlinks are stored as links (never followed); sockets, fifos and devices
                    # skipped.
                    def keep(info):
                        if info.isfile() or info.isdir() or info.issym():
                            return info
                        skipped.append({"name": info.name, "type": "file", "reason": "not a regular file, directory or symlink"})
                        return None

                    for entry in sorted(os.listdir(data_dir)):
                        archive.add(os.path.join(data_dir, entry), arcname="data/" + entry, recursive=True, filter=keep)
                try:
                    cwd = os.getcwd()
                except OSError:
                    cwd = data_dir
                env = {key: value for key, value in os.environ.items() if not key.startswith(_SANDBOX_ENV_PREFIXES)}
                _add_json(
                    archive,
                    STATE_JSON,
                    {"mechanism": mechanism, "modules": modules, "names": sorted(values), "skipped": skipped, "cwd": cwd, "env": env},
                )
    except BaseException:
        # A failed save leaves nothing in the sandbox's tmp dir (a tmpfs: its pages are memory).
        if os.path.lexists(path):
            os.unlink(path)
        raise
    size = os.path.getsize(path)
    if size > max_bytes:
        os.unlink(path)
        raise ValueError("the session's files and state take %d bytes, above its cap of %d bytes" % (size, max_bytes))
    print(json.dumps({"archive": path, "size": size, "mechanism": mechanism, "saved": sorted(values) + sorted(modules), "skipped": skipped}))


def _check_room(state_bytes, data_dir):
    """Refuses, before writing anything, an archive that cannot fit in the tmp dir it is written
    to (a tmpfs smaller than the memory limit, which caps the state): a clear error instead of
    ENOSPC halfway, and the session goes on."""
    files = 0
    for root, dirs, names in os.walk(data_dir):
        for name in names:
            try:
                files += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    needed = state_bytes + files + (64 << 10)  # headers, state.json
    try:
        stat = os.statvfs(_tmp_dir())
        free = stat.f_bavail * stat.f_frsize
    except OSError:
        return
    if needed > free:
        raise ValueError(
            "the session's state and files take about %d bytes, above its cap here: the %d bytes free in "
            "the sandbox's tmp dir (%s), where the archive is written before the server reads it; "
            "delete large objects (del name) or files to let it hibernate" % (needed, free, _tmp_dir())
        )


def discard(path):
    """Removes the archive `save` wrote, once the server has read it."""
    if os.path.basename(path) == ARCHIVE_NAME and os.path.lexists(path):
        os.unlink(path)


def _inside(root, path):
    root = os.path.normpath(root)
    path = os.path.normpath(path)
    return path == root or path.startswith(root + os.sep)


def _open_dir_beneath(root, relative_parts):
    """Opens (creating) root/relative_parts one component at a time, never through a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in relative_parts:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def restore(archive_path):
    """Unpacks the archive the server wrote into the tmp dir, restores files, globals, modules,
    cwd and environment; prints one JSON line {mechanism, restored, not_restored, files}."""
    import json
    import tarfile

    data_dir = _data_dir()
    not_restored, files, state, namespace_member = [], 0, None, None
    links = []
    with tarfile.open(archive_path, mode="r:") as archive:
        for member in archive:
            name = member.name
            parts = name.split("/")
            if name.startswith("/") or any(part in ("", ".", "..") for part in parts):
                not_restored.append({"name": name, "type": "file", "reason": "unsafe path in the saved archive"})
                continue
            if name == STATE_JSON and member.isfile():
                if member.size > 64 << 20:
                    raise ValueError("saved state.json is implausibly large")
                state = json.loads(archive.extractfile(member).read())
                continue
            if name == NAMESPACE and member.isfile():
                namespace_member = member
                continue
            if parts[0] != "data" or len(parts) < 2:
                not_restored.append({"name": name, "type": "file", "reason": "unexpected member in the saved archive"})
                continue
            relative = parts[1:]
            if member.isdir():
                os.close(_open_dir_beneath(data_dir, relative))
            elif member.isfile():
                dir_fd = _open_dir_beneath(data_dir, relative[:-1])
                try:
                    try:
                        os.unlink(relative[-1], dir_fd=dir_fd)
                    except FileNotFoundError:
                        pass
                    fd = os.open(relative[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
                    with os.fdopen(fd, "wb") as out:
                        source = archive.extractfile(member)
                        while True:
                            chunk = source.read(1 << 20)
                            if not chunk:
                                break
                            out.write(chunk)
                        out.flush()
                        os.fchmod(fd, (member.mode & 0o777) | 0o600)
                        os.utime(fd, (member.mtime, member.mtime))
                finally:
                    os.close(dir_fd)
                files += 1
            elif member.issym():
                links.append(member)
            else:
                not_restored.append({"name": "/".join(relative), "type": "file", "reason": "not a regular file, directory or symlink"})
        # Links last, so no file above was written through one of them.
        for member in links:
            relative = member.name.split("/")[1:]
            at = os.path.join(data_dir, *relative)
            target = member.linkname
            resolved = target if os.path.isabs(target) else os.path.join(os.path.dirname(at), target)
            if not _inside(data_dir, resolved):
                not_restored.append({"name": "/".join(relative), "type": "symlink", "reason": "points outside the data dir (%s)" % target})
                continue
            dir_fd = _open_dir_beneath(data_dir, relative[:-1])
            try:
                os.symlink(target, relative[-1], dir_fd=dir_fd)
                files += 1
            except FileExistsError:
                not_restored.append({"name": "/".join(relative), "type": "symlink", "reason": "name taken"})
            finally:
                os.close(dir_fd)
        if state is None:
            raise ValueError("the saved archive has no state/state.json")
        namespace = sys.modules["__main__"].__dict__
        restored = []
        mechanism = state.get("mechanism", "pickle")
        if namespace_member is not None:
            if mechanism == "dill":
                import dill as pickler
            else:
                import pickle as pickler
            try:
                values = pickler.load(archive.extractfile(namespace_member))
                if not isinstance(values, dict):
                    raise ValueError("the saved namespace is not a dict")
                namespace.update(values)
                restored += list(values)
            except Exception as exc:
                # Files, modules, cwd and environment still come back; the model redoes the rest.
                not_restored.append({"name": "*", "type": "namespace", "reason": "%s: %s" % (type(exc).__name__, str(exc)[:200])})
    import importlib

    for name, module in dict(state.get("modules", {})).items():
        try:
            namespace[str(name)] = importlib.import_module(str(module))
            restored.append(name)
        except BaseException as exc:
            not_restored.append({"name": name, "type": "module " + str(module), "reason": "%s: %s" % (type(exc).__name__, str(exc)[:200])})
    env = state.get("env", {})
    if isinstance(env, dict):
        for key in [key for key in os.environ if key not in env and not key.startswith(_SANDBOX_ENV_PREFIXES)]:
            del os.environ[key]
        for key, value in env.items():
            if isinstance(key, str) and isinstance(value, str) and "\0" not in key + value and "=" not in key:
                os.environ[key] = value
    cwd = state.get("cwd")
    if isinstance(cwd, str):
        try:
            os.chdir(cwd)
        except OSError as exc:
            not_restored.append({"name": "cwd", "type": "directory", "reason": "%s: %s" % (cwd, exc.strerror)})
    # What the save could not keep (sockets, threads) comes first: the model redoes those.
    skipped = [item for item in state.get("skipped", []) if isinstance(item, dict)]
    os.unlink(archive_path)
    print(json.dumps({"mechanism": mechanism, "restored": sorted(restored), "not_restored": skipped + not_restored, "files": files}))
