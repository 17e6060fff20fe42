#!/usr/bin/env bash
# tools/lib/asan_stage.sh RESULTS_DIR [--build-only]: tools/test's ASan+UBSan stage. Builds the
# [unit] tier's executables (sandbox_unit_tests) and what they link, the whole product but the
# binaries' mains, in build-asan/ with -Werror (its own configure: users' build/ stays
# warning-tolerant, here every warning fails), then runs each with the filter "[unit]".
# With clang, at -O0: the heaviest translation unit compiles in 9 s of CPU against GCC's 19.5 s
# with the same sanitizers and warnings (GCC's -Wconversion set; CMakeLists.txt), which halves
# this stage on a fresh machine. The plain build and the Debian 13 build stay GCC's.
# The same tree holds the libFuzzer targets (SANDBOX_FUZZ, coverage hooks compiled in): the fuzz
# smoke runs them from here (tools/fuzz --tree), so the product compiles once for both stages.
# Writes Catch2's JUnit file per executable, plus a case for the build and one per executable
# for its exit status. --build-only: the build alone (tools/lib/idle_builds.sh).
set -uo pipefail
source "$(dirname "$0")/common.sh"
results=$1 build_only=${2:-}
asan_dir=$SANDBOX_ROOT/build-asan

# CMake cannot change a tree's compiler: a tree GCC configured (before clang) is made anew.
if [ -f "$asan_dir/CMakeCache.txt" ] &&
   ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' "$asan_dir/CMakeCache.txt"; then
  rm -rf "$asan_dir"
fi
CC=clang CXX=clang++ SANDBOX_BUILD_TARGETS="sandbox_unit_tests fuzz_targets" \
  build_project "$asan_dir" -DSANDBOX_SANITIZE=ON -DSANDBOX_FUZZ=ON -DSANDBOX_WERROR=ON -DSANDBOX_UNITY=ON \
  2> "$results/asan-build.log"
build_rc=$?
[ "$build_only" != --build-only ] || exit "$build_rc"
# A failed build (a warning, with -Werror) is a failed test, not a quiet run of stale binaries.
python3 "$SANDBOX_ROOT/tools/lib/junit_case.py" "$results/asan-build.xml" asan-build \
  "the ASan+UBSan build (the [unit] tier and the fuzz targets) with -Werror" "$build_rc" \
  "$results/asan-build.log"
if [ "$build_rc" -ne 0 ]; then
  log "the ASan+UBSan build failed:"
  tail -40 "$results/asan-build.log" >&2
  exit 0
fi

while IFS= read -r exe; do
  name=$(basename "$exe")
  "$exe" "[unit]" --reporter junit --out "$results/asan-$name.xml" >/dev/null \
    2>"$results/asan-$name.log"
  rc=$?
  [ "$rc" -eq 0 ] || { log "ASan/UBSan run of $name failed:"; cat "$results/asan-$name.log" >&2; }
  # A leak or a report at exit leaves every case passed in the JUnit file: only the exit status
  # says so, hence a case of its own.
  python3 "$SANDBOX_ROOT/tools/lib/junit_case.py" "$results/asan-$name-exit.xml" asan \
    "$name: exits 0 under ASan+UBSan (no leak, no report)" "$rc" "$results/asan-$name.log"
done < "$asan_dir/unit_test_executables.txt"
exit 0
