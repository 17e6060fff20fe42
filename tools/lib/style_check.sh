#!/usr/bin/env bash
# tools/lib/style_check.sh RESULTS_DIR [FILE...]: the style the build keeps, as three tests
# that tools/test counts (JUnit files style-format.xml, style-tidy.xml and style-size.xml):
# clang-format over every tracked C++ file (.clang-format), clang-tidy over the product's
# sources (runtime/ mcp/ rootfs/ seccomp/ tools/) with the checks .clang-tidy names, and why, and
# no file in runtime/ over 600 lines. A failure carries the
# offending lines. With FILEs (a developer's check before a commit), those only.
# clang-tidy reads build-tidy, a tree configured as tools/test's main tree is, in unity batches
# (SANDBOX_UNITY), and never compiled: configure writes compile_commands.json, CMake's batch
# files and rootfs/recipe's customize_script.h, and what is made at build time (tools/cli's
# sandbox_commit.h, the MCP Apps views' embedded_views.cc) is made alone (tidy_generated_*).
# clang_tidy_cached.py checks each batch as one translation unit, reporting the findings in
# the sources it includes as a per-file run would (tests/cli/clang_tidy_batch_test.sh), and
# what a check that follows calls finds in the bodies the batch's other sources define, at
# about a fifth of the CPU (347 CPU-s against 1663 for the product's 218 sources): the headers
# the sources share are parsed once per batch. A header missing here shows as clang-tidy's
# "file not found" error, which fails the case.
set -uo pipefail
source "$(dirname "$0")/common.sh"
results=$1
shift
cd "$SANDBOX_ROOT"
tidy_dir=$SANDBOX_ROOT/build-tidy
# What the batches include that is made at build time: a custom target of no dependencies, and
# a source, made by ninja's command for it alone (built as a file of its target, it would wait
# for the libraries the target links, which compile the tree).
tidy_generated_targets=(sandbox_commit_header)
tidy_generated_sources=(mcp/apps/embedded_views.cc)
case_file=tools/lib/junit_case.py
if [ $# -gt 0 ]; then
  format_files=("$@")
  mapfile -t tidy_files < <(printf '%s\n' "$@" |
    grep -E '^(runtime|mcp|rootfs|seccomp|tools)/.*\.cc$')
else
  mapfile -t format_files < <(git ls-files '*.cc' '*.h')
  mapfile -t tidy_files < <(git ls-files 'runtime/*.cc' 'mcp/*.cc' 'rootfs/*.cc' \
    'seccomp/*.cc' 'tools/*.cc')
fi

printf '%s\n' "${format_files[@]}" | xargs clang-format --dry-run 2>&1 | grep -A2 'warning:' \
  > "$results/style-format.log"
python3 "$case_file" "$results/style-format.xml" style \
  "clang-format: every C++ file as .clang-format lays it out" \
  "$([ -s "$results/style-format.log" ] && echo 1 || echo 0)" "$results/style-format.log"

# One clang-tidy per core; a clean file prints nothing. A file whose inputs are those of a
# clean result before (the same sources, headers, flags, clang-tidy and .clang-tidy) is not
# checked again: clang_tidy_cached.py, its cache beside the Debian roots' (CI keeps it).
# A tree that does not configure, or a clang_tidy_cached.py that fails, fails the case: no
# clang-tidy run is not a clean one.
make_generated() {
  local made
  cmake --build "$tidy_dir" --target "${tidy_generated_targets[@]}" || return 1
  for made in "${tidy_generated_sources[@]}"; do
    sh -c "$(ninja -C "$tidy_dir" -t commands -s "$made")" && [ -s "$tidy_dir/$made" ] ||
      return 1
  done
}
if { cmake -S "$SANDBOX_ROOT" -B "$tidy_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DSANDBOX_UNITY=ON && make_generated; } \
    > "$results/style-tidy-configure.log" 2>&1; then
  tidy_rc=0
  [ ${#tidy_files[@]} -eq 0 ] ||
    python3 tools/lib/clang_tidy_cached.py "$tidy_dir" "$SANDBOX_CACHE_DIR/clang-tidy" \
      "${tidy_files[@]}" > "$results/style-tidy.out" || tidy_rc=$?
  touch "$results/style-tidy.out"
  grep -E -A3 '(warning|error):' "$results/style-tidy.out" > "$results/style-tidy.log"
  [ "$tidy_rc" -eq 0 ] ||
    echo "style_check: clang_tidy_cached.py exited $tidy_rc (its error: style-check.log)" \
      >> "$results/style-tidy.log"
else
  { echo "style_check: configuring $tidy_dir for clang-tidy failed:"
    tail -20 "$results/style-tidy-configure.log"; } > "$results/style-tidy.log"
fi
python3 "$case_file" "$results/style-tidy.xml" style \
  "clang-tidy: the checks .clang-tidy names, over the product's sources" \
  "$([ -s "$results/style-tidy.log" ] && echo 1 || echo 0)" "$results/style-tidy.log"

# Issue #37's rule for the house: no file in runtime/ over 600 lines; a file that grows past it
# is split along its seams (as session_manager.cc and http_transport.cc were).
git ls-files 'runtime/*.cc' 'runtime/*.h' | xargs wc -l |
  awk '$2 != "total" && $1 > 600 { print $2 ": " $1 " lines (at most 600)" }' \
  > "$results/style-size.log"
python3 "$case_file" "$results/style-size.xml" style \
  "file size: no file in runtime/ over 600 lines" \
  "$([ -s "$results/style-size.log" ] && echo 1 || echo 0)" "$results/style-size.log"

for log in format tidy size; do
  if [ -s "$results/style-$log.log" ]; then
    echo "style_check: $log found problems:" >&2
    head -40 "$results/style-$log.log" >&2
  fi
done
exit 0
