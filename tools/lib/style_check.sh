#!/usr/bin/env bash
# tools/lib/style_check.sh RESULTS_DIR: the style the build keeps, as two tests that
# tools/test counts (JUnit files style-format.xml and style-tidy.xml): clang-format over every
# tracked C++ file (.clang-format), and clang-tidy over the product's sources (runtime/ mcp/
# rootfs/ seccomp/ tools/) with the checks .clang-tidy names, and why. A failure carries the
# offending lines.
# clang-tidy reads per-file compile commands from build-tidy, a tree that is configured and
# never compiled: configure writes compile_commands.json and rootfs/recipe's customize_script.h,
# and the one header made at build time, tools/cli's sandbox_commit.h, is made alone
# (tidy_generated). tools/test's main tree compiles in unity batches, whose commands name the
# batches, not the files. Configured as the main tree is but for the batches, so each file is
# checked with the flags it compiles with. A header missing here shows as clang-tidy's
# "file not found" error, which fails the case.
set -uo pipefail
source "$(dirname "$0")/common.sh"
results=$1
cd "$SANDBOX_ROOT"
tidy_dir=$SANDBOX_ROOT/build-tidy
tidy_generated=(sandbox_commit_header)
case_file=tools/lib/junit_case.py

git ls-files '*.cc' '*.h' | xargs clang-format --dry-run 2>&1 | grep -A2 'warning:' \
  > "$results/style-format.log"
python3 "$case_file" "$results/style-format.xml" style \
  "clang-format: every C++ file as .clang-format lays it out" \
  "$([ -s "$results/style-format.log" ] && echo 1 || echo 0)" "$results/style-format.log"

# One clang-tidy per core; a clean file prints nothing. A file whose inputs are those of a
# clean result before (the same sources, headers, flags, clang-tidy and .clang-tidy) is not
# checked again: clang_tidy_cached.py, its cache beside the Debian roots' (CI keeps it).
# A tree that does not configure, or a clang_tidy_cached.py that fails, fails the case: no
# clang-tidy run is not a clean one.
if { cmake -S "$SANDBOX_ROOT" -B "$tidy_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DSANDBOX_UNITY=OFF &&
     cmake --build "$tidy_dir" --target "${tidy_generated[@]}"; } \
    > "$results/style-tidy-configure.log" 2>&1; then
  git ls-files 'runtime/*.cc' 'mcp/*.cc' 'rootfs/*.cc' 'seccomp/*.cc' 'tools/*.cc' |
    xargs python3 tools/lib/clang_tidy_cached.py "$tidy_dir" "$SANDBOX_CACHE_DIR/clang-tidy" \
    > "$results/style-tidy.out"
  tidy_rc=$?
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

for log in format tidy; do
  if [ -s "$results/style-$log.log" ]; then
    echo "style_check: $log found problems:" >&2
    head -40 "$results/style-$log.log" >&2
  fi
done
exit 0
