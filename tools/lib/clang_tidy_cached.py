"""clang_tidy_cached.py BUILD_DIR CACHE_DIR FILE...: clang-tidy over FILEs (one process per core),
printing its findings on stdout, with the clean results kept in CACHE_DIR.

BUILD_DIR needs only to be configured (its compile_commands.json and the files CMake generates
at configure time): clang-tidy reads the compile commands, not the objects. Where BUILD_DIR is
a unity tree (SANDBOX_UNITY, CMakeLists.txt), its commands name CMake's unity batches, each a
file that includes up to 16 of a target's sources; the FILEs a batch includes are then checked
as that one translation unit, so the headers they share (the standard library, fmt, spdlog,
nlohmann/json, Boost.Beast: most of clang-tidy's time on a file) are parsed once per batch, not
once per file. tools/test gives it such a tree (build-tidy); a per-file tree checks each file
alone, as a developer's tree does. Either way a finding is reported where it is: clang-tidy
reports one in the translation unit's main file and, through --header-filter, in the headers
the filter names; a batch's filter names exactly the FILEs it checks, so the findings are a
per-file run's (tests/cli/clang_tidy_batch_test.sh compares the two on planted violations). One
difference: a batch sees the bodies of the functions its other sources define, so a check that
follows calls into bodies finds what a per-file run could not (bugprone-exception-escape found
an exception that could leave sandbox-init's main through Agent::Serve). The batch is checked
as a copy of CMake's unity file beside it whose #include lines say NOLINT to
bugprone-suspicious-include (the check against including a .cc file, which is what a batch is
for); a product file that includes a .cc file is still found.

A result depends only on what clang-tidy reads: its version, .clang-tidy, the translation
unit's compile command (and, for a batch, which files it reports on) and the content of every
file it includes. clang-tidy itself says which files those are: run with the compiler's -H, it
lists every header it enters on stderr (a batch's sources among them). After a clean check
that list is kept (a manifest per translation unit, its content and command) and the result
under a key that hashes all of these; the next run reads the manifest, hashes the listed files'
content as they are now, and finds the result only when none changed: a changed source checks
its batch again. A changed #include changes the file that holds it, so the list is never stale
where it matters. tools/test on a fresh clone (CI) or after a small change checks what changed,
where clang-tidy over every file costs many CPU-minutes. Only clean results are kept: a
translation unit with findings is checked, and its findings printed, every run."""
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import time

build_dir, cache_dir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
source_root = os.path.realpath(os.getcwd())
# CMake's unity batches: <target>.dir/Unity/unity_<n>_<lang>.<ext>, one #include per source.
unity_file = re.compile(r"/Unity/unity_[0-9]+_cxx\.cxx$")
unity_include = re.compile(r'^#include "(.*)"$')
batch_suffix = ".tidy.cxx"  # the copy of a batch clang-tidy checks, beside CMake's


class Unit:
    """One clang-tidy run: a source alone, or a batch reporting on the sources it checks."""

    def __init__(self, path, command, directory, database, reported, batch=False):
        self.path = path            # the translation unit's main file
        self.command = command      # its compile command ("" when the tree has none)
        self.directory = directory
        self.database = database    # the directory of the compile_commands.json naming it
        self.reported = reported    # the FILEs whose findings it reports
        self.batch = batch


def compile_commands():
    """The compile command and its directory of each source, by absolute path."""
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    commands = {}
    for entry in entries:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        commands[path] = (entry["command"], entry["directory"])
    return commands


def batch_members(path):
    """The sources a unity batch includes, as CMake wrote them (absolute paths)."""
    with open(path, encoding="utf-8") as f:
        return [m.group(1) for m in map(unity_include.match, f.read().splitlines()) if m]


def header_filter(paths):
    """A regular expression (POSIX extended, as clang-tidy reads it) matching exactly PATHS."""
    return "^(" + "|".join(re.sub(r"([][.*+?(){}|^$\\])", r"\\\1", p) for p in paths) + ")$"


def batch_units(commands, wanted):
    """Batches covering the WANTED files (absolute paths) that a unity batch includes, fewest
    first: a source two targets compile (runtime/base in sandbox-init too) is checked once, in
    the batch that covers most of what is left. Each batch's copy, with its NOLINT includes, is
    written beside CMake's, and named in a compile_commands.json of the copies."""
    batches = []
    for path, (command, directory) in commands.items():
        if unity_file.search(path) and os.path.exists(path):
            members = batch_members(path)
            batches.append((path, command, directory, members,
                            {os.path.realpath(m) for m in members} & wanted))
    units, left = [], set(wanted)
    while left:
        best = max(batches, key=lambda b: len(b[4] & left), default=None)
        if best is None or not best[4] & left:
            break
        path, command, directory, members, covered = best
        copy = path[:-len(".cxx")] + batch_suffix
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r'^(#include ".*")$', r"\1  // NOLINT(bugprone-suspicious-include)", text,
                      flags=re.M)
        if not os.path.exists(copy) or open(copy, encoding="utf-8").read() != text:
            with open(copy, "w", encoding="utf-8") as f:
                f.write(text)
        reported = [m for m in members if os.path.realpath(m) in covered & left]
        units.append(Unit(copy, command.replace(path, copy), directory,
                          os.path.join(build_dir, "tidy-batches"), reported, batch=True))
        left -= covered
    if units:
        os.makedirs(os.path.join(build_dir, "tidy-batches"), exist_ok=True)
        with open(os.path.join(build_dir, "tidy-batches", "compile_commands.json"), "w",
                  encoding="utf-8") as f:
            json.dump([{"directory": u.directory, "command": u.command, "file": u.path}
                       for u in units], f, indent=1)
    return units, left


def units_to_check(commands):
    """The translation units that check FILEs: batches where the tree has them, the rest alone."""
    wanted = {os.path.realpath(name): name for name in files}
    units, alone = batch_units(commands, set(wanted))
    for name in files:
        if os.path.realpath(name) in alone:
            path = os.path.abspath(name)
            command, directory = commands.get(path, ("", source_root))
            units.append(Unit(path, command, directory, build_dir, [name]))
    return units


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
    """A file's content; a batch's copy names its sources by absolute path, so it is hashed
    with the checkout's path taken out, as a command is."""
    if path not in content_hashes:
        try:
            with open(path, "rb") as f:
                content = f.read()
            if path.endswith(batch_suffix):
                content = content.replace(source_root.encode(), b"<src>")
            content_hashes[path] = hashlib.sha256(content).hexdigest()
        except OSError:
            content_hashes[path] = "missing"
    return content_hashes[path]


def tidy_args(unit, header_filter_of=header_filter):
    """A batch names .clang-tidy itself: clang-tidy looks for it from the main file up, and the
    batch's copy lies in the build tree, which may be outside the checkout."""
    args = ["-p", unit.database, "--quiet", "--extra-arg=-H"]
    if unit.batch:
        args += ["--config-file=" + os.path.join(source_root, ".clang-tidy"),
                 "--header-filter=" + header_filter_of(unit.reported)]
    return args


def manifest_name(unit, common):
    """Where the list of the unit's inputs is kept: one per main file and content, command,
    arguments and clang-tidy, so going back to a version of the file (another branch) finds its
    list again."""
    h = hashlib.sha256(common.encode())
    # The header filter by the files it names (its regular expression escapes their paths).
    args = tidy_args(unit, lambda reported: "\0".join(reported))
    h.update("\0".join([unit.command] + args).replace(source_root, "<src>").encode())
    h.update(f"\0{portable(unit.path)}\0{content_hash(unit.path)}".encode())
    return "inputs-" + h.hexdigest()


def result_key(manifest, inputs):
    """The key of a clean result: the manifest's name (file, command, clang-tidy) and the
    content of every input."""
    h = hashlib.sha256(manifest.encode())
    for name in sorted(inputs):
        h.update(f"\0{name}\0{content_hash(local(name))}".encode())
    return "clean-" + h.hexdigest()


def run_tidy(unit):
    """clang-tidy's findings and the files the translation unit read (-H's list on stderr:
    one line per header entered, its depth in dots)."""
    result = subprocess.run(["clang-tidy"] + tidy_args(unit) + [unit.path],
                            capture_output=True, text=True, check=False)
    inputs = {portable(unit.path)}
    for line in result.stderr.splitlines():
        dots, _, header = line.partition(" ")
        if dots and dots == "." * len(dots) and header:
            inputs.add(portable(os.path.normpath(os.path.join(unit.directory, header))))
    return result.returncode, result.stdout, inputs


def main():
    os.makedirs(cache_dir, exist_ok=True)
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True,
                             check=False).stdout
    with open(os.path.join(source_root, ".clang-tidy"), encoding="utf-8") as f:
        common = version + "\0" + f.read()
    units = units_to_check(compile_commands())
    todo, cached = [], 0
    for unit in units:
        manifest = manifest_name(unit, common)
        key = None
        try:
            with open(os.path.join(cache_dir, manifest), encoding="utf-8") as f:
                key = result_key(manifest, f.read().split("\n"))
        except OSError:
            pass
        if unit.command and key and os.path.exists(os.path.join(cache_dir, key)):
            for entry in (manifest, key):  # in use: kept by the pruning below
                os.utime(os.path.join(cache_dir, entry))
            cached += 1
        else:
            todo.append((unit, manifest if unit.command else None))
    failed = 0
    # The largest batches first, so the last to end is a small one; the output in FILEs' order.
    order = sorted(range(len(todo)), key=lambda i: -len(todo[i][0].reported))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        runs = {i: pool.submit(run_tidy, todo[i][0]) for i in order}
        for i, (unit, manifest) in enumerate(todo):
            rc, out, inputs = runs[i].result()
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
                    print(f"{unit.path}: error: clang-tidy exited {rc} without a finding")
    # Results of a month ago are of sources long changed: removed, so the cache stays small.
    for entry in os.scandir(cache_dir):
        if entry.stat().st_mtime < time.time() - 30 * 86400:
            os.unlink(entry.path)
    batches = sum(1 for unit in units if unit.batch)
    print(f"clang-tidy: {len(files)} files"
          + (f" in {len(units)} translation units ({batches} batches)" if batches else "")
          + f", {cached} clean in the cache, {len(todo)} checked, {failed} with findings",
          file=sys.stderr)


main()
