"""clang_tidy_cached.py BUILD_DIR CACHE_DIR FILE...: clang-tidy over FILEs (one process per core),
printing its findings on stdout, with the clean results kept in CACHE_DIR.

BUILD_DIR needs only to be configured (its compile_commands.json and the headers CMake generates
at configure time): clang-tidy reads the per-file compile commands, not the objects, so
tools/test gives it a configured, unbuilt per-file tree (build-tidy) while the main tree
compiles in unity batches.

A file's result depends only on what clang-tidy reads: its version, .clang-tidy, the file's
compile command and the content of every file the translation unit includes. clang-tidy itself
says which files those are: run with the compiler's -H, it lists every header it enters on
stderr. After a clean check that list is kept (a manifest per file, its content and command)
and the result under a key that hashes all of these; the next run reads the manifest, hashes
the listed files' content as they are now, and finds the result only when none changed. A
changed #include changes the file that holds it, so the list is never stale where it matters.
tools/test on a fresh clone (CI) or after a small change checks what changed, where clang-tidy
over every file costs about half an hour of CPU. Only clean results are kept: a file with
findings is checked, and its findings printed, every run."""
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import time

build_dir, cache_dir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
source_root = os.path.realpath(os.getcwd())


def compile_commands():
    """The compile command and its directory of each source, by absolute path."""
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    commands = {}
    for entry in entries:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        commands[path] = (entry["command"], entry["directory"])
    return commands


def portable(path):
    """A path in the checkout relative to it, so a clone elsewhere (CI clones anew each run)
    finds the results of the last one."""
    if path.startswith(source_root + "/"):
        return "<src>/" + path[len(source_root) + 1:]
    return path


def local(name):
    return source_root + name[len("<src>"):] if name.startswith("<src>/") else name


content_hashes = {}


def content_hash(path):
    if path not in content_hashes:
        try:
            with open(path, "rb") as f:
                content_hashes[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            content_hashes[path] = "missing"
    return content_hashes[path]


def manifest_name(path, command, common):
    """Where the list of the file's inputs is kept: one per file and content, command and
    clang-tidy, so going back to a version of the file (another branch) finds its list again."""
    h = hashlib.sha256(common.encode())
    h.update(command.replace(source_root, "<src>").encode())
    h.update(f"\0{portable(path)}\0{content_hash(path)}".encode())
    return "inputs-" + h.hexdigest()


def result_key(manifest, inputs):
    """The key of a clean result: the manifest's name (file, command, clang-tidy) and the
    content of every input."""
    h = hashlib.sha256(manifest.encode())
    for name in sorted(inputs):
        h.update(f"\0{name}\0{content_hash(local(name))}".encode())
    return "clean-" + h.hexdigest()


def run_tidy(path, directory):
    """clang-tidy's findings and the files the translation unit read (-H's list on stderr:
    one line per header entered, its depth in dots)."""
    result = subprocess.run(["clang-tidy", "-p", build_dir, "--quiet", "--extra-arg=-H", path],
                            capture_output=True, text=True, check=False)
    inputs = {portable(os.path.abspath(path))}
    for line in result.stderr.splitlines():
        dots, _, header = line.partition(" ")
        if dots and dots == "." * len(dots) and header:
            inputs.add(portable(os.path.normpath(os.path.join(directory, header))))
    return result.returncode, result.stdout, inputs


def main():
    os.makedirs(cache_dir, exist_ok=True)
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True,
                             check=False).stdout
    with open(os.path.join(source_root, ".clang-tidy"), encoding="utf-8") as f:
        common = version + "\0" + f.read()
    commands = compile_commands()
    todo, cached = [], 0
    for name in files:
        path = os.path.abspath(name)
        command, directory = commands.get(path, ("", source_root))
        manifest = manifest_name(path, command, common)
        key = None
        try:
            with open(os.path.join(cache_dir, manifest), encoding="utf-8") as f:
                key = result_key(manifest, f.read().split("\n"))
        except OSError:
            pass
        if command and key and os.path.exists(os.path.join(cache_dir, key)):
            for entry in (manifest, key):  # in use: kept by the pruning below
                os.utime(os.path.join(cache_dir, entry))
            cached += 1
        else:
            todo.append((name, directory, manifest if command else None))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        runs = pool.map(lambda t: run_tidy(t[0], t[1]), todo)
        for (name, _, manifest), (rc, out, inputs) in zip(todo, runs):
            sys.stdout.write(out)
            if rc == 0 and "warning:" not in out and "error:" not in out:
                if manifest:
                    with open(os.path.join(cache_dir, manifest), "w", encoding="utf-8") as f:
                        f.write("\n".join(sorted(inputs)))
                    open(os.path.join(cache_dir, result_key(manifest, inputs)), "w",
                         encoding="utf-8").close()
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
