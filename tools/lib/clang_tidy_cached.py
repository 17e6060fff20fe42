"""clang_tidy_cached.py BUILD_DIR CACHE_DIR FILE...: clang-tidy over FILEs (one process per core),
printing its findings on stdout, with the clean results kept in CACHE_DIR.

A file's result depends only on what clang-tidy reads: its version, .clang-tidy, the file's
compile command and the content of every file the translation unit includes. The build tree
knows the last: the compiler's dependency list of each object (`ninja -t deps`, GCC's view
of the same include paths; clang's own builtin headers change with its version). The key is a
hash of all of these, so a file is checked again when any of them changes, and not otherwise:
tools/test on a fresh clone (CI) or after a small change checks what changed, where clang-tidy
over every file costs about half an hour of CPU. Only clean results are kept: a file with
findings is checked, and its findings printed, every run. A file without a dependency list
(not compiled in this tree), or one changed since its object was built, is always checked."""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time

build_dir, cache_dir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
source_root = os.path.realpath(os.getcwd())


def compile_commands():
    """The compile command of each source, and the object it writes, by absolute path."""
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    commands = {}
    for entry in entries:
        words = shlex.split(entry["command"])
        obj = words[words.index("-o") + 1] if "-o" in words else None
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        commands[path] = (entry["command"], obj)
    return commands


def object_deps():
    """Each object's inputs (ninja -t deps), paths made absolute."""
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], capture_output=True,
                         text=True, check=False).stdout
    deps, current = {}, None
    abs_build = os.path.abspath(build_dir)
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif line.startswith("    ") and current is not None:
            deps[current].append(os.path.normpath(os.path.join(abs_build, line.strip())))
        elif "(VALID)" in line:
            current = line.split(":", 1)[0]
            deps[current] = []
        else:
            current = None  # a stale list: the object is rebuilt, so no key from it
    return deps


content_hashes = {}


def content_hash(path):
    if path not in content_hashes:
        try:
            with open(path, "rb") as f:
                content_hashes[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            content_hashes[path] = "missing"
    return content_hashes[path]


def cache_key(path, commands, deps, common):
    command, obj = commands.get(path, (None, None))
    inputs = deps.get(obj) if obj else None
    if not inputs:
        return None
    # The list is the last compile's: a source or header changed since (an #include added, not
    # yet built) may need what the list lacks, so such a file is checked and its result not kept.
    try:
        built = os.stat(os.path.join(build_dir, obj)).st_mtime
        if any(os.stat(dep).st_mtime > built for dep in set(inputs) | {path}):
            return None
    except OSError:
        return None
    # Paths in the checkout are taken relative to it, so a clone elsewhere (CI clones anew each
    # run) finds the results of the last one.
    h = hashlib.sha256(common.encode())
    h.update(command.replace(source_root, "<src>").encode())
    for dep in sorted(set(inputs) | {path}):
        name = "<src>/" + dep[len(source_root) + 1:] if dep.startswith(source_root + "/") else dep
        h.update(f"\0{name}\0{content_hash(dep)}".encode())
    return h.hexdigest()


def run_tidy(path):
    result = subprocess.run(["clang-tidy", "-p", build_dir, "--quiet", path],
                            capture_output=True, text=True, check=False)
    return result.returncode, result.stdout


def main():
    os.makedirs(cache_dir, exist_ok=True)
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True,
                             check=False).stdout
    with open(os.path.join(source_root, ".clang-tidy"), encoding="utf-8") as f:
        common = version + "\0" + f.read()
    commands, deps = compile_commands(), object_deps()
    todo, cached = [], 0
    for name in files:
        path = os.path.abspath(name)
        key = cache_key(path, commands, deps, common)
        if key and os.path.exists(os.path.join(cache_dir, key)):
            os.utime(os.path.join(cache_dir, key))  # in use: kept by the pruning below
            cached += 1
        else:
            todo.append((name, key))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for (name, key), (rc, out) in zip(todo, pool.map(lambda t: run_tidy(t[0]), todo)):
            sys.stdout.write(out)
            if rc == 0 and "warning:" not in out and "error:" not in out:
                if key:
                    open(os.path.join(cache_dir, key), "w", encoding="utf-8").close()
            else:
                failed += 1
                if not out.strip():
                    print(f"{name}: error: clang-tidy exited {rc} without a finding")
    # Results of a month ago are of sources long changed: removed, so the cache stays small.
    for entry in os.scandir(cache_dir):
        if entry.stat().st_mtime < time.time() - 30 * 86400:
            os.unlink(entry.path)
    print(f"clang-tidy: {len(files)} files, {cached} clean in the cache, {len(todo)} checked,"
          f" {failed} with findings", file=sys.stderr)


main()
